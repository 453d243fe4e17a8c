package graph_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// TestUpdateNodeAdminFieldsOnly: liveness fields are not in updateNode's
// input (asking to set them is a validation error that changes nothing, so
// an admin cannot fail running jobs without their grace period); name,
// labels and drain are checked and stored.
func TestUpdateNodeAdminFieldsOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a := e.newTenant("alpha")
		sys := viewer.SystemContext(context.Background())
		beat := time.Now().UTC().Truncate(time.Second)
		n := e.db.Ent.Node.Create().SetTenantID(a.ent.ID).SetName("gpu1").SetStatus(node.StatusOnline).
			SetLastHeartbeatAt(beat).SetLabels([]string{"rack=a4"}).SaveX(sys)
		const update = `mutation($id: ID!, $in: UpdateComputeNodeInput!) { updateNode(id: $id, input: $in) { id name drain labels status } }`
		unchanged := func(what string) {
			t.Helper()
			got := e.db.Ent.Node.GetX(sys, n.ID)
			if got.Status != node.StatusOnline || got.LastHeartbeatAt == nil || !got.LastHeartbeatAt.Equal(beat) ||
				got.Name != "gpu1" || got.Drain || !slices.Equal(got.Labels, []string{"rack=a4"}) {
				t.Fatalf("%s changed the node: %s %v %s drain=%v %v", what, got.Status, got.LastHeartbeatAt, got.Name, got.Drain, got.Labels)
			}
		}

		for _, in := range []vars{
			{"status": "OFFLINE"},
			{"lastHeartbeatAt": "2020-01-01T00:00:00Z"},
			{"status": "OFFLINE", "lastHeartbeatAt": "2020-01-01T00:00:00Z", "drain": true},
		} {
			r := e.gql(a.adminToken, update, vars{"id": n.ID, "in": in})
			if r.code() != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("updateNode %v: %+v, want GRAPHQL_VALIDATION_FAILED", in, r.Errors)
			}
			unchanged(fmt.Sprint(in))
		}
		// The same as a literal in the query text.
		r := e.gql(a.adminToken, fmt.Sprintf(`mutation { updateNode(id: %q, input: {status: OFFLINE, lastHeartbeatAt: "2020-01-01T00:00:00Z"}) { id } }`, n.ID), nil)
		if r.code() != "GRAPHQL_VALIDATION_FAILED" {
			t.Fatalf("literal updateNode with liveness fields: %+v", r.Errors)
		}
		unchanged("literal input")

		many := make([]string, 65)
		for i := range many {
			many[i] = fmt.Sprintf("k%d=v", i)
		}
		for _, tc := range []struct {
			in    vars
			field string
		}{
			{vars{"name": "bad name!"}, "name"},
			{vars{"name": ""}, "name"},
			{vars{"labels": []string{"novalue"}}, "labels"},
			{vars{"labels": []string{"=v"}}, "labels"},
			{vars{"labels": []string{"k=<script>"}}, "labels"},
			{vars{"labels": []string{"k=a b"}}, "labels"},
			{vars{"labels": []string{"k=1", "k=2"}}, "labels"},
			{vars{"labels": many}, "labels"},
			{vars{"appendLabels": many[1:], "drain": true}, "labels"}, // 64 new and the one there
		} {
			r := e.gql(a.adminToken, update, vars{"id": n.ID, "in": tc.in})
			if r.code() != "BAD_USER_INPUT" || r.Errors[0].Extensions["field"] != tc.field {
				t.Fatalf("updateNode %v: %+v, want BAD_USER_INPUT on %s", tc.in, r.Errors, tc.field)
			}
			unchanged(fmt.Sprint(tc.in))
		}
		if r := e.gql(a.memberToken, update, vars{"id": n.ID, "in": vars{"drain": true}}); r.code() != "FORBIDDEN" {
			t.Fatalf("member draining a node: %+v", r.Errors)
		}
		unchanged("a member")

		r = e.gql(a.adminToken, update, vars{"id": n.ID, "in": vars{"name": "gpu-1", "drain": true, "appendLabels": []string{"rack=b2", "gpu=h100"}}})
		r.ok(t)
		var out struct {
			UpdateNode struct {
				Name   string
				Drain  bool
				Labels []string
				Status string
			}
		}
		r.decode(t, &out)
		want := struct {
			Name   string
			Drain  bool
			Labels []string
			Status string
		}{"gpu-1", true, []string{"rack=b2", "gpu=h100"}, "ONLINE"}
		if !reflect.DeepEqual(out.UpdateNode, want) {
			t.Fatalf("updateNode answered %+v, want %+v", out.UpdateNode, want)
		}
		if got := e.db.Ent.Node.GetX(sys, n.ID); !got.Drain || !got.LastHeartbeatAt.Equal(beat) || !slices.Equal(got.Labels, want.Labels) {
			t.Fatalf("stored node: drain=%v heartbeat %v labels %v", got.Drain, got.LastHeartbeatAt, got.Labels)
		}
	})
}

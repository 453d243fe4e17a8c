package nodes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

// TestRevokeCredential: an admin's revoke clears the credential, takes the
// node offline, signals its tunnel, and a heartbeat already on its way
// does not bring it back; members and other tenants are refused and
// change nothing.
func TestRevokeCredential(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w, tn := newRemoveWorld(t, url)
		other := fixture.NewTenant(t, w.db, fixture.TenantOptions{Slug: "other"})
		id := w.join(t, "gpu-1")
		if err := w.nodes.Connected(context.Background(), id, wire.Inventory{CPUs: 4, MemoryMiB: 1024}, "v1", w.now); err != nil {
			t.Fatal(err)
		}
		before := w.db.Ent.Node.GetX(w.sys, id)
		memberCtx := tn.As(tn.AddMember(t, "member"))

		for _, tc := range []struct {
			name string
			ctx  context.Context
			code fault.Code
		}{
			{"member", memberCtx, fault.Forbidden},
			{"other tenant's admin", other.AsAdmin(), fault.NotFound},
		} {
			_, err := w.nodes.RevokeCredential(tc.ctx, id)
			if got := faultCode(err); got != tc.code {
				t.Errorf("%s: %v (code %q); want %s", tc.name, err, got, tc.code)
			}
		}
		if n := w.db.Ent.Node.GetX(w.sys, id); n.CredentialHash != before.CredentialHash || n.Status != node.StatusOnline {
			t.Fatalf("a refused revoke wrote the node: %+v", n)
		}

		wake, unsubscribe := w.bus.Subscribe(notify.TopicNode, id)
		defer unsubscribe()
		n, err := w.nodes.RevokeCredential(w.admin, id)
		if err != nil {
			t.Fatal(err)
		}
		if n.Status != node.StatusOffline {
			t.Errorf("revoked node is %s; want offline", n.Status)
		}
		if got := w.db.Ent.Node.GetX(w.sys, id); got.CredentialHash != "" {
			t.Error("the credential hash is still there")
		}
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Error("the revoke did not signal the node's tunnel")
		}
		if back, err := w.nodes.Heartbeat(context.Background(), id, w.now.Add(time.Second)); err != nil || back {
			t.Errorf("heartbeat after the revoke: back %v, %v; want it to stay offline", back, err)
		}
		if got := w.db.Ent.Node.GetX(w.sys, id); got.Status != node.StatusOffline {
			t.Errorf("after a late heartbeat the node is %s; want offline", got.Status)
		}
	})
}

// TestDeleteNode: removal is refused, writing nothing, while a service is
// placed on the node or a node storage lives on it; otherwise the node is
// gone and ended jobs keep their services.
func TestDeleteNode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w, tn := newRemoveWorld(t, url)
		other := fixture.NewTenant(t, w.db, fixture.TenantOptions{Slug: "other"})
		memberCtx := tn.As(tn.AddMember(t, "member"))

		busy := w.join(t, "busy")
		running := w.running(t, busy, 0, w.now)
		holder := w.join(t, "holder")
		tn.AddStorage(t, fixture.Storage{Name: "scratch", Kind: storage.KindNode, Path: "/data", NodeID: holder})
		idle := w.join(t, "idle")
		ended := w.running(t, idle, 0, w.now)
		if err := w.jobs.MarkEnded(context.Background(), ended, job.StatusComplete, "", w.now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}

		for _, tc := range []struct {
			name, id string
			ctx      context.Context
			code     fault.Code
			words    string
		}{
			{"member", idle, memberCtx, fault.Forbidden, "only tenant admins"},
			{"other tenant's admin", idle, other.AsAdmin(), fault.NotFound, ""},
			{"service placed", busy, w.admin, fault.BadUserInput, "node busy still has 1 service(s) placed on it; drain it"},
			{"node storage", holder, w.admin, fault.BadUserInput, `node holder holds the node storage "scratch"`},
		} {
			before := w.db.Ent.Node.GetX(w.sys, tc.id)
			_, err := w.nodes.Delete(tc.ctx, tc.id)
			if got := faultCode(err); got != tc.code || tc.words != "" && !contains(err, tc.words) {
				t.Errorf("%s: %v (code %q); want %s saying %q", tc.name, err, got, tc.code, tc.words)
			}
			after, err := w.db.Ent.Node.Get(w.sys, tc.id)
			if err != nil || after.CredentialHash != before.CredentialHash || after.Drain != before.Drain || after.Status != before.Status {
				t.Errorf("%s: a refused removal wrote the node: %+v, %v", tc.name, after, err)
			}
		}
		if _, err := w.db.Ent.Service.Query().Where(service.JobID(running), service.NodeID(busy)).Only(w.sys); err != nil {
			t.Errorf("the placed service lost its node: %v", err)
		}

		name, err := w.nodes.Delete(w.admin, idle)
		if err != nil || name != "idle" {
			t.Fatalf("removing the idle node: %q, %v", name, err)
		}
		if _, err := w.db.Ent.Node.Get(w.sys, idle); !ent.IsNotFound(err) {
			t.Errorf("the removed node is still there: %v", err)
		}
		svcs, err := w.db.Ent.Service.Query().Where(service.JobID(ended)).All(w.sys)
		if err != nil || len(svcs) != 1 || svcs[0].NodeID != "" {
			t.Errorf("the ended job's services: %+v, %v; want one, without its node", svcs, err)
		}
	})
}

func faultCode(err error) fault.Code {
	if err == nil {
		return ""
	}
	if ent.IsNotFound(err) {
		return fault.NotFound
	}
	var f *fault.Error
	if errors.As(err, &f) {
		return f.Code
	}
	return fault.Internal
}

func contains(err error, words string) bool {
	return err != nil && strings.Contains(err.Error(), words)
}

// newRemoveWorld is newWorld keeping the fixture tenant, for its members.
func newRemoveWorld(t *testing.T, url string) (*world, *fixture.Tenant) {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	bus := notify.New(tn.DB.Pool, fixture.Log())
	t.Cleanup(bus.Close)
	js := fixture.Jobs(tn.DB, nil)
	js.Bus = bus
	w := &world{db: tn.DB, bus: bus, log: fixture.Log(), tenant: tn.Ent, jobs: js, admin: tn.AsAdmin(), sys: fixture.Sys(),
		now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	w.nodes = &nodes.Service{DB: tn.DB, Ent: tn.DB.Ent, Bus: bus, Log: w.log, Now: func() time.Time { return w.now }}
	return w, tn
}

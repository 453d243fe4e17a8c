package graph_test

import (
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

func TestViewerAndTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("acme")
		r := e.gql(a.adminToken, `{ viewer { user { email role } tenant { slug } environment { name } admin superadmin } tenant { name emailDomains } }`, nil)
		r.ok(t)
		var out struct {
			Viewer struct {
				User        struct{ Email, Role string }
				Tenant      struct{ Slug string }
				Environment struct{ Name string }
				Admin       bool
			}
			Tenant struct {
				Name         string
				EmailDomains []string
			}
		}
		r.decode(t, &out)
		if out.Viewer.User.Email != "admin@acme.test" || out.Viewer.User.Role != "ADMIN" || !out.Viewer.Admin ||
			out.Viewer.Tenant.Slug != "acme" || out.Viewer.Environment.Name != "main" ||
			out.Tenant.Name != "ACME" || len(out.Tenant.EmailDomains) != 1 || out.Tenant.EmailDomains[0] != "acme.test" {
			t.Fatalf("viewer = %+v", out)
		}
		if r := e.gql("", `{ viewer { user { email } } }`, nil); r.code() != "UNAUTHENTICATED" {
			t.Fatalf("anonymous viewer: %+v", r)
		}
	})
}

// Appends to list fields keep what is there (entgql's Mutate alone drops them).
func TestUpdateAppendsToLists(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("appends")
		r := e.gql(a.adminToken, `mutation { createQueue(input: {name: "gpu", gpuPrices: [{type: "A10", perMinute: 1}]}) { id } }`, nil)
		r.ok(t)
		var q struct{ CreateQueue struct{ ID string } }
		r.decode(t, &q)
		r = e.gql(a.adminToken, `mutation($id: ID!) { updateQueue(id: $id, input: {appendGpuPrices: [{type: "H100", perMinute: 2.5}]}) { gpuPrices { type perMinute } } }`, vars{"id": q.CreateQueue.ID})
		r.ok(t)
		if got := string(r.Data); got != `{"updateQueue":{"gpuPrices":[{"type":"A10","perMinute":1},{"type":"H100","perMinute":2.5}]}}` {
			t.Fatalf("after append: %s", got)
		}
		r = e.gql(a.adminToken, `mutation($id: ID!) { updateQueue(id: $id, input: {appendGpuPrices: [{type: "A10", perMinute: 3}]}) { id } }`, vars{"id": q.CreateQueue.ID})
		if r.code() != "BAD_USER_INPUT" {
			t.Fatalf("appending a GPU type priced already: %+v", r)
		}
		r = e.gql(a.adminToken, `mutation { updateTenant(input: {appendEmailDomains: ["Lab.Appends.TEST"]}) { emailDomains } }`, nil)
		r.ok(t)
		if got := string(r.Data); got != `{"updateTenant":{"emailDomains":["appends.test","lab.appends.test"]}}` {
			t.Fatalf("after append: %s", got)
		}
	})
}

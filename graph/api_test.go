package graph_test

import (
	"context"
	"testing"
	"time"

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

// Charges are summed per job, kind, project or user over what the viewer
// may see: members their own, admins the tenant's.
func TestChargeTotals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("totals")
		e.gql(a.adminToken, `mutation { updateQueue(id: "`+e.queueID(a)+`", input: {cpuPrice: 1, startFee: 2}) { id } }`, nil).ok(t)
		for _, u := range []string{a.admin.ID, a.member.ID} {
			e.gql(a.adminToken, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100, reason: "budget"}) { id } }`, vars{"u": u}).ok(t)
		}
		var sub struct{ SubmitJob struct{ ID string } }
		r := e.gql(a.memberToken, `mutation { submitJob(spec: {queue: "default", services: [{name: "main", command: ["true"], cpu: 1}]}) { id } }`, nil)
		r.ok(t)
		r.decode(t, &sub)
		start := time.Now().Add(-5 * time.Minute)
		if err := e.jobs.MarkRunning(context.Background(), sub.SubmitJob.ID, start); err != nil {
			t.Fatal(err)
		}
		if err := e.jobs.MarkEnded(context.Background(), sub.SubmitJob.ID, "COMPLETE", "exit 0", start.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		totals := func(token, group string) string {
			r := e.gql(token, `query($g: ChargeGrouping!) { chargeTotals(groupBy: $g) { key tokens count } }`, vars{"g": group})
			r.ok(t)
			return string(r.Data)
		}
		job := sub.SubmitJob.ID
		if got, want := totals(a.memberToken, "JOB"), `{"chargeTotals":[{"key":"`+job+`","tokens":7,"count":6}]}`; got != want {
			t.Errorf("member's totals by job: %s, want %s", got, want)
		}
		if got, want := totals(a.memberToken, "KIND"), `{"chargeTotals":[{"key":"COMPUTE","tokens":5,"count":5},{"key":"START","tokens":2,"count":1},{"key":"GRANT","tokens":-100,"count":1}]}`; got != want {
			t.Errorf("member's totals by kind: %s, want %s", got, want)
		}
		if got, want := totals(a.adminToken, "USER"), `{"chargeTotals":[{"key":"`+a.member.ID+`","tokens":-93,"count":7},{"key":"`+a.admin.ID+`","tokens":-100,"count":1}]}`; got != want {
			t.Errorf("admin's totals by user: %s, want %s", got, want)
		}
		r = e.gql(a.memberToken, `{ viewer { balance } }`, nil)
		r.ok(t)
		if got := string(r.Data); got != `{"viewer":{"balance":93}}` {
			t.Errorf("member's balance: %s", got)
		}
	})
}

// queueID is the ID of the tenant's default queue.
func (e *env) queueID(tn *tenant) string {
	e.t.Helper()
	var out struct {
		Queues struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	r := e.gql(tn.adminToken, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, nil)
	r.ok(e.t)
	r.decode(e.t, &out)
	return out.Queues.Edges[0].Node.ID
}

// The job form offers exactly the buckets a member may read on storages the
// queue reaches.
func TestMountableBuckets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("mounts")
		ids := func(q string) map[string]string {
			var out struct {
				Storages struct {
					Edges []struct{ Node struct{ ID, Name string } }
				}
				Groups struct {
					Edges []struct{ Node struct{ ID, Name string } }
				}
			}
			r := e.gql(a.adminToken, q, nil)
			r.ok(t)
			r.decode(t, &out)
			m := map[string]string{}
			for _, ed := range out.Storages.Edges {
				m[ed.Node.Name] = ed.Node.ID
			}
			for _, ed := range out.Groups.Edges {
				m[ed.Node.Name] = ed.Node.ID
			}
			return m
		}
		e.gql(a.adminToken, `mutation { createGroup(input: {name: "staff"}) { id } }`, nil).ok(t)
		e.gql(a.adminToken, `mutation { createStorage(input: {name: "far", kind: S3, endpoint: "http://127.0.0.1:9", s3Bucket: "b"}) { id } }`, nil).ok(t)
		m := ids(`{ storages { edges { node { id name } } } groups { edges { node { id name } } } }`)
		for _, b := range []struct{ name, storage, group string }{
			{"shared", "local", "everyone"}, {"private", "local", "staff"}, {"remote", "far", "everyone"},
		} {
			e.gql(a.adminToken, `mutation($n: String!, $s: ID!, $g: ID!) { createBucket(input: {name: $n, storageID: $s, readGroupIDs: [$g]}) { id } }`,
				vars{"n": b.name, "s": m[b.storage], "g": m[b.group]}).ok(t)
		}
		r := e.gql(a.memberToken, `{ mountableBuckets(queue: "default") { name } }`, nil)
		r.ok(t)
		if got := string(r.Data); got != `{"mountableBuckets":[{"name":"shared"}]}` {
			t.Fatalf("member's mountable buckets: %s", got)
		}
		r = e.gql(a.adminToken, `{ mountableBuckets(queue: "default") { name } }`, nil)
		r.ok(t)
		if got := string(r.Data); got != `{"mountableBuckets":[{"name":"private"},{"name":"shared"}]}` {
			t.Fatalf("admin's mountable buckets: %s", got)
		}
		if r := e.gql(a.memberToken, `{ mountableBuckets(queue: "nope") { name } }`, nil); r.code() != "NOT_FOUND" {
			t.Fatalf("unknown queue: %+v", r)
		}
		r = e.gql(a.memberToken, `{ bucketObjects(bucket: "shared") { key size } }`, nil)
		r.ok(t)
		if got := string(r.Data); got != `{"bucketObjects":[]}` {
			t.Fatalf("empty bucket lists %s", got)
		}
		if r := e.gql(a.memberToken, `{ bucketObjects(bucket: "private") { key } }`, nil); r.code() != "FORBIDDEN" {
			t.Fatalf("listing a bucket the member may not read: %+v", r)
		}
		if r := e.gql(a.memberToken, `mutation { deleteBucketObject(bucket: "shared", key: "../x") }`, nil); r.code() != "FORBIDDEN" && r.code() != "BAD_USER_INPUT" {
			t.Fatalf("deleting from a read-only bucket: %+v", r)
		}
	})
}

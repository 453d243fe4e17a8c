package graph_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// publicURL is the server address deployments' URLs start with in tests.
const publicURL = "http://levers9.test"

func withDeployments(r *graph.Resolver) {
	withFunctions(r)
	r.PublicURL = publicURL
}

const (
	deployVersion = `mutation($i: DeployAppInput!) { deployApp(input: $i) { id state version liveVersion functions { id name version kind } } }`
	lookupQ       = `query($a: String!, $n: String!, $v: Int) { lookupFunction(app: $a, name: $n, version: $v) { id version serving urls } }`
	versionsQ     = `query($id: ID!) { node(id: $id) { ... on App { liveVersion versions { number live serving functions {
		name serving urls queueDepth deadLetters nextRuns(count: 3) } } } } }`
	putQ = `mutation($f: ID!, $k: String) { putTask(function: $f, item: {data: "eA=="}, idempotencyKey: $k) { id state } }`
)

type gqlApp struct {
	ID, State            string
	Version, LiveVersion int
	Functions            []struct {
		ID, Name, Kind string
		Version        int
	}
}

// deployWeb deploys version N of app web: an endpoint, a task queue and a
// schedule.
func (e *env) deployWeb(t *testing.T, tn *tenant) gqlApp {
	t.Helper()
	r := e.gql(tn.adminToken, deployVersion, vars{"i": vars{"name": "web", "code": strings.Repeat("cd", 32), "deploy": true,
		"functions": []vars{
			{"name": "hello", "module": "app", "qualname": "hello", "queue": "default", "kind": "ENDPOINT", "httpMethod": "POST"},
			{"name": "resize", "module": "app", "qualname": "resize", "queue": "default", "kind": "TASK_QUEUE", "retries": 3},
			{"name": "tick", "module": "app", "qualname": "tick", "queue": "default", "kind": "CRON", "cron": "*/15 * * * *"},
		}}})
	r.ok(t)
	var out struct{ DeployApp gqlApp }
	r.decode(t, &out)
	return out.DeployApp
}

// fn is the ID of function name in the app's latest version (the app's
// functions are those of every version).
func (a gqlApp) fn(name string) string {
	for _, f := range a.Functions {
		if f.Name == name && f.Version == a.Version {
			return f.ID
		}
	}
	return ""
}

type gqlLookup struct {
	ID      string
	Version int
	Serving bool
	URLs    []string `json:"urls"`
}

func (e *env) lookup(t *testing.T, token string, v any) gqlLookup {
	t.Helper()
	r := e.gql(token, lookupQ, vars{"a": "web", "n": "hello", "v": v})
	r.ok(t)
	var out struct{ LookupFunction gqlLookup }
	r.decode(t, &out)
	return out.LookupFunction
}

func TestDeployedVersions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withDeployments)
		a, b := e.newTenant("depa"), e.newTenant("depb")
		v1 := e.deployWeb(t, a)
		v2 := e.deployWeb(t, a)
		if v1.ID != v2.ID || v1.Version != 1 || v2.Version != 2 || v2.LiveVersion != 2 || v2.State != "DEPLOYED" {
			t.Fatalf("two deploys: %+v then %+v", v1, v2)
		}

		// Lookups reach the live version; its URLs include the alias.
		got := e.lookup(t, a.memberToken, nil)
		if got.Version != 2 || !got.Serving || strings.Join(got.URLs, " ") != publicURL+"/endpoint/hello/v2 "+publicURL+"/endpoint/hello" {
			t.Errorf("lookup after two deploys: %+v", got)
		}
		if got := e.lookup(t, a.memberToken, 1); got.Version != 1 || strings.Join(got.URLs, " ") != publicURL+"/endpoint/hello/v1" {
			t.Errorf("lookup of v1: %+v", got)
		}

		// A member changes only their own apps: the admin's is not theirs
		// to roll back or stop.
		for _, q := range []string{
			`mutation($id: ID!) { rollbackApp(id: $id, version: 1) { liveVersion } }`,
			`mutation($id: ID!) { stopAppVersion(id: $id, version: 1) { liveVersion } }`,
		} {
			if r := e.gql(a.memberToken, q, vars{"id": v2.ID}); r.code() != "FORBIDDEN" && r.code() != "NOT_FOUND" {
				t.Errorf("a member's %s on the admin's app: %s %v", q, r.Data, r.Errors)
			}
		}
		r := e.gql(a.adminToken, `mutation($id: ID!) { rollbackApp(id: $id, version: 1) { liveVersion version } }`, vars{"id": v2.ID})
		r.ok(t)
		if got := e.lookup(t, a.memberToken, nil); got.Version != 1 {
			t.Errorf("lookup after rollbackApp to v1: %+v", got)
		}

		// A task-queue put with a key twice is one task.
		var puts [2]string
		for i := range puts {
			r := e.gql(a.memberToken, putQ, vars{"f": v2.fn("resize"), "k": "item-1"})
			r.ok(t)
			var out struct{ PutTask struct{ ID, State string } }
			r.decode(t, &out)
			puts[i] = out.PutTask.ID
		}
		if puts[0] == "" || puts[0] != puts[1] {
			t.Errorf("two puts with one key: tasks %v", puts)
		}
		r = e.gql(a.memberToken, putQ, vars{"f": v2.fn("resize")})
		r.ok(t)
		// A dead item shows as a dead letter until requeued.
		if err := e.db.Ent.Task.UpdateOneID(puts[0]).SetState(task.StateDEAD).Exec(viewer.SystemContext(context.Background())); err != nil {
			t.Fatal(err)
		}
		type version struct {
			Number        int
			Live, Serving bool
			Functions     []struct {
				Name                    string
				Serving                 bool
				URLs                    []string `json:"urls"`
				QueueDepth, DeadLetters int
				NextRuns                []time.Time
			}
		}
		versions := func() []version {
			t.Helper()
			r := e.gql(a.memberToken, versionsQ, vars{"id": v2.ID})
			r.ok(t)
			var out struct{ Node struct{ Versions []version } }
			r.decode(t, &out)
			return out.Node.Versions
		}
		vs := versions()
		if len(vs) != 2 || vs[0].Number != 2 || vs[0].Live || !vs[1].Live || !vs[0].Serving || len(vs[0].Functions) != 3 {
			t.Fatalf("versions: %+v", vs)
		}
		for _, f := range vs[0].Functions {
			switch f.Name {
			case "resize":
				if f.QueueDepth != 1 || f.DeadLetters != 1 || len(f.URLs) != 1 || f.URLs[0] != publicURL+"/queue/resize/v2" {
					t.Errorf("v2 resize: %+v", f)
				}
			case "tick":
				if len(f.NextRuns) != 3 || !f.NextRuns[0].After(time.Now()) || f.NextRuns[0].Minute()%15 != 0 || len(f.URLs) != 0 {
					t.Errorf("v2 tick: %+v", f)
				}
			}
		}
		r = e.gql(a.memberToken, `mutation($id: ID!) { requeueTask(id: $id) { id state } }`, vars{"id": puts[0]})
		r.ok(t)
		if !strings.Contains(string(r.Data), "PENDING") {
			t.Errorf("requeueTask: %s", r.Data)
		}

		// A stopped version serves no more; lookups of it fail.
		r = e.gql(a.adminToken, `mutation($id: ID!) { stopAppVersion(id: $id, version: 2) { liveVersion state } }`, vars{"id": v2.ID})
		r.ok(t)
		vs = versions()
		if vs[0].Serving || vs[0].Functions[0].Serving || len(vs[0].Functions[0].URLs) != 0 || !vs[1].Serving {
			t.Errorf("after stopAppVersion 2: %+v", vs)
		}
		if r := e.gql(a.memberToken, lookupQ, vars{"a": "web", "n": "hello", "v": 2}); r.code() != "NOT_FOUND" {
			t.Errorf("lookup of a stopped version: %s %+v", r.Data, r.Errors)
		}

		// A public deployment's URLs add the /pub/TENANT/ENVIRONMENT/ form.
		r = e.gql(a.adminToken, `mutation($i: DeployAppInput!) { deployApp(input: $i) { functions { urls } } }`, vars{"i": vars{"name": "pubapp",
			"code": strings.Repeat("cd", 32), "deploy": true, "functions": []vars{{"name": "open", "module": "app", "qualname": "open",
				"queue": "default", "kind": "ENDPOINT", "public": true}}}})
		r.ok(t)
		if !strings.Contains(string(r.Data), publicURL+"/pub/depa/") || !strings.Contains(string(r.Data), "/endpoint/open/v1") {
			t.Errorf("a public endpoint's URLs: %s", r.Data)
		}

		// Another tenant reaches none of it.
		if r := e.gql(b.adminToken, lookupQ, vars{"a": "web", "n": "hello"}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's lookup: %s %+v", r.Data, r.Errors)
		}
		if r := e.gql(b.adminToken, putQ, vars{"f": v2.fn("resize"), "k": "x"}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's put: %s %+v", r.Data, r.Errors)
		}
		if r := e.gql(b.adminToken, `mutation($id: ID!) { rollbackApp(id: $id) { id } }`, vars{"id": v2.ID}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's rollback: %s %+v", r.Data, r.Errors)
		}
		if r := e.gql(b.adminToken, `mutation($id: ID!) { requeueTask(id: $id) { id } }`, vars{"id": puts[0]}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's requeue: %s %+v", r.Data, r.Errors)
		}
	})
}

package graph_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/viewer"
)

// everyBlob says every blob was uploaded: these tests pass payloads inline.
type everyBlob struct{}

func (everyBlob) Has(context.Context, string) (bool, error) { return true, nil }

func withFunctions(r *graph.Resolver) {
	r.Functions = &functions.Service{DB: r.DB, Log: r.Log, Now: time.Now, Bus: r.Logs.Bus, Jobs: r.JobService, Blobs: everyBlob{}}
}

const (
	deployApp = `mutation($i: DeployAppInput!) { deployApp(input: $i) { id state functions { id name } } }`
	callFn    = `mutation($f: ID!, $a: PayloadInput!) { callFunction(function: $f, args: $a) {
		id state attempt result { data blob } errorException waitReason phases { queuedAt startedAt } } }`
	mapFn    = `mutation($f: ID!, $items: [PayloadInput!]!) { mapFunction(function: $f, items: $items) { id total succeeded failed finishedAt } }`
	awaitQ   = `query($id: ID!, $w: Float) { awaitTask(id: $id, waitSeconds: $w) { id state mapIndex result { data } errorKind errorException phases { queuedAt finishedAt } } }`
	resultsQ = `query($id: ID!, $from: Int!) { mapResults(id: $id, from: $from, waitSeconds: 0) { map { id total } tasks { id mapIndex } } }`
)

type gqlTask struct {
	ID, State      string
	MapIndex       int
	Result         *struct{ Data, Blob *string }
	ErrorKind      string
	ErrorException *string
	WaitReason     *string
	Phases         struct{ QueuedAt, StartedAt, FinishedAt *time.Time }
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// deployEcho deploys app echo with function echo on the default queue and
// returns the function's ID.
func (e *env) deployEcho(t *testing.T, tn *tenant) string {
	t.Helper()
	r := e.gql(tn.adminToken, deployApp, vars{"i": vars{"name": "echo", "code": strings.Repeat("ab", 32),
		"functions": []vars{{"name": "echo", "module": "app", "qualname": "echo", "queue": "default"}}}})
	r.ok(t)
	var out struct {
		DeployApp struct {
			ID, State string
			Functions []struct{ ID, Name string }
		}
	}
	r.decode(t, &out)
	if out.DeployApp.State != "RUNNING" || len(out.DeployApp.Functions) != 1 {
		t.Fatalf("deployed %+v", out.DeployApp)
	}
	return out.DeployApp.Functions[0].ID
}

func TestFunctionCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withFunctions)
		a, b := e.newTenant("fna"), e.newTenant("fnb")
		fn := e.deployEcho(t, a)

		r := e.gql(a.memberToken, callFn, vars{"f": fn, "a": vars{"data": b64("hi")}})
		r.ok(t)
		var call struct{ CallFunction gqlTask }
		r.decode(t, &call)
		c := call.CallFunction
		if c.State != "PENDING" || c.Result != nil || c.Phases.QueuedAt == nil || c.Phases.StartedAt != nil {
			t.Fatalf("call: %+v", c)
		}

		// A finished call shows its result and phases.
		done := time.Now()
		if err := e.db.Ent.Task.UpdateOneID(c.ID).SetState(task.StateCOMPLETE).SetResult([]byte("HI")).SetFinishedAt(done).
			Exec(viewer.SystemContext(context.Background())); err != nil {
			t.Fatal(err)
		}
		r = e.gql(a.memberToken, awaitQ, vars{"id": c.ID, "w": 5})
		r.ok(t)
		var got struct{ AwaitTask gqlTask }
		r.decode(t, &got)
		if g := got.AwaitTask; g.State != "COMPLETE" || g.Result == nil || g.Result.Data == nil || *g.Result.Data != b64("HI") ||
			g.Phases.FinishedAt == nil || g.ErrorException != nil {
			t.Fatalf("await: %+v", g)
		}

		// A map of 10,000 small items fits one request (body, parser and
		// cost limits); one more item does not.
		items := make([]vars, functions.MaxMapItems)
		for i := range items {
			items[i] = vars{"data": b64("x")}
		}
		r = e.gql(a.memberToken, mapFn, vars{"f": fn, "items": items})
		r.ok(t)
		var m struct {
			MapFunction struct {
				ID    string
				Total int
			}
		}
		r.decode(t, &m)
		if m.MapFunction.Total != functions.MaxMapItems {
			t.Fatalf("map: %+v", m.MapFunction)
		}
		if r := e.gql(a.memberToken, mapFn, vars{"f": fn, "items": append(items, vars{"data": b64("x")})}); r.code() != "BAD_USER_INPUT" {
			t.Errorf("a map of 10,001 items: %+v", r.Errors)
		}
		r = e.gql(a.memberToken, resultsQ, vars{"id": m.MapFunction.ID, "from": 0})
		r.ok(t)

		// Bad input names the field.
		for _, tc := range []struct {
			name  string
			args  vars
			field string
		}{
			{"not base64", vars{"data": "!!"}, "args.data"},
			{"over 1 MiB", vars{"data": base64.StdEncoding.EncodeToString(make([]byte, functions.InlineLimit+1))}, "args"},
		} {
			r := e.gql(a.memberToken, callFn, vars{"f": fn, "a": tc.args})
			if r.code() != "BAD_USER_INPUT" || r.Errors[0].Extensions["field"] != tc.field {
				t.Errorf("%s: %+v, want BAD_USER_INPUT on %s", tc.name, r.Errors, tc.field)
			}
		}

		// Another tenant finds neither the function nor the call.
		if r := e.gql(b.adminToken, callFn, vars{"f": fn, "a": vars{"data": b64("x")}}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's call: %+v", r.Errors)
		}
		if r := e.gql(b.adminToken, awaitQ, vars{"id": c.ID}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's await: %+v", r.Errors)
		}
		if r := e.gql(b.adminToken, `mutation($id: ID!) { cancelTask(id: $id) { id } }`, vars{"id": c.ID}); r.code() != "NOT_FOUND" {
			t.Errorf("another tenant's cancel: %+v", r.Errors)
		}
	})
}

// taskUpdated sends the call now, then its changes until it has ended.
func TestTaskUpdated(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withFunctions)
		a := e.newTenant("fnsub")
		fn := e.deployEcho(t, a)
		r := e.gql(a.memberToken, callFn, vars{"f": fn, "a": vars{"data": b64("hi")}})
		r.ok(t)
		var call struct{ CallFunction gqlTask }
		r.decode(t, &call)
		id := call.CallFunction.ID

		s := e.sse(t, a.memberToken, `subscription($id: ID!) { taskUpdated(id: $id) { id state waitReason } }`, vars{"id": id})
		state := func() string {
			t.Helper()
			ev := s.event()
			if ev.Complete || len(ev.Errors) > 0 {
				t.Fatalf("got complete=%v %+v, want a task", ev.Complete, ev.Errors)
			}
			var d struct{ TaskUpdated gqlTask }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			return d.TaskUpdated.State
		}
		if st := state(); st != "PENDING" {
			t.Fatalf("first event %s, want PENDING", st)
		}
		e.gql(a.memberToken, `mutation($id: ID!) { cancelTask(id: $id) { id } }`, vars{"id": id}).ok(t)
		if st := state(); st != "CANCELLED" {
			t.Fatalf("after cancelTask: %s, want CANCELLED", st)
		}
		expectComplete(t, s)

		// Another tenant's call cannot be followed.
		b := e.newTenant("fnsub2")
		s2 := e.sse(t, b.memberToken, `subscription($id: ID!) { taskUpdated(id: $id) { id } }`, vars{"id": id})
		if ev := s2.event(); len(ev.Errors) == 0 || ev.Errors[0].Extensions["code"] != "NOT_FOUND" {
			t.Errorf("another tenant's subscription: %+v", ev)
		}
	})
}

// mapProgress sends the map now, then as items end, until all have.
func TestMapProgress(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withFunctions)
		a := e.newTenant("fnmap")
		fn := e.deployEcho(t, a)
		r := e.gql(a.memberToken, mapFn, vars{"f": fn, "items": []vars{{"data": b64("1")}, {"data": b64("2")}}})
		r.ok(t)
		var m struct{ MapFunction struct{ ID string } }
		r.decode(t, &m)
		s := e.sse(t, a.memberToken, `subscription($id: ID!) { mapProgress(id: $id) { id total failed finishedAt } }`, vars{"id": m.MapFunction.ID})
		type progress struct {
			Total, Failed int
			FinishedAt    *time.Time
		}
		next := func() progress {
			t.Helper()
			ev := s.event()
			if ev.Complete || len(ev.Errors) > 0 {
				t.Fatalf("got complete=%v %+v, want the map", ev.Complete, ev.Errors)
			}
			var d struct{ MapProgress progress }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			return d.MapProgress
		}
		if p := next(); p.Total != 2 || p.FinishedAt != nil {
			t.Fatalf("first event %+v", p)
		}
		e.gql(a.memberToken, `mutation($id: ID!) { cancelMap(id: $id) { id } }`, vars{"id": m.MapFunction.ID}).ok(t)
		if p := next(); p.Failed != 2 || p.FinishedAt == nil {
			t.Fatalf("after cancelMap: %+v", p)
		}
		expectComplete(t, s)
	})
}

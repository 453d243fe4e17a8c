package functions_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/viewer"
)

// jobOf is the job spec's runner of function fnID's first container.
func (w *world) jobOf(t *testing.T, fnID string) *ent.Job {
	t.Helper()
	cs := w.containers(t, fnID)
	if len(cs) == 0 || cs[0].JobID == "" {
		t.Fatalf("function %s has no container with a job: %+v", fnID, cs)
	}
	j, err := w.tn.DB.Ent.Job.Get(fixture.Sys(), cs[0].JobID)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestVersions: each deploy adds a version whose functions serve beside
// the older ones' (each running its own code); lookups and unversioned
// URLs reach the live version, which a rollback moves; a stopped version
// cancels its calls and answers no more; stopping the last stops the app.
func TestVersions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		code2 := w.upload(t, ctx, "code", []byte("PK version two"))
		fns := func() []functions.FunctionSpec {
			return []functions.FunctionSpec{{Name: "embed"}, {Name: "predict", Kind: function.KindENDPOINT, HTTPMethod: "post"}}
		}
		v1 := w.deployVersion(t, ctx, "vision", codeHash, fns()...)
		if v1.State != app.StateDEPLOYED || v1.Ephemeral || v1.Version != 1 || v1.LiveVersion != 1 || len(v1.Edges.Functions) != 2 {
			t.Fatalf("first deploy: %+v with %d functions", v1, len(v1.Edges.Functions))
		}
		e1, p1 := fnNamed(t, v1.Edges.Functions, "embed"), fnNamed(t, v1.Edges.Functions, "predict")
		if p1.Version != 1 || p1.Kind != function.KindENDPOINT || p1.HTTPMethod != "POST" || p1.SyncTimeoutSeconds != 60 ||
			p1.Deployment != "predict" || p1.CodeHash != codeHash || e1.Kind != function.KindFUNCTION {
			t.Fatalf("v1 functions: %+v %+v", e1, p1)
		}
		v2 := w.deployVersion(t, ctx, "vision", code2, fns()...)
		if v2.ID != v1.ID || v2.Version != 2 || v2.LiveVersion != 2 || len(v2.Edges.Functions) != 2 {
			t.Fatalf("second deploy: %+v with %d functions", v2, len(v2.Edges.Functions))
		}
		e2, p2 := fnNamed(t, v2.Edges.Functions, "embed"), fnNamed(t, v2.Edges.Functions, "predict")

		c1, err := w.fn.Call(ctx, e1.ID, args("one"))
		if err != nil {
			t.Fatalf("calling version 1: %v", err)
		}
		c2, err := w.fn.Call(ctx, e2.ID, args("two"))
		if err != nil {
			t.Fatalf("calling version 2: %v", err)
		}
		for id, want := range map[string]string{e1.ID: codeHash, e2.ID: code2} {
			if got := w.jobOf(t, id).Spec.Runner.CodeHash; got != want {
				t.Errorf("container of %s runs code %s, want %s", id, got[:8], want[:8])
			}
		}

		lookup := func(v int) *ent.Function {
			t.Helper()
			f, err := w.fn.Lookup(ctx, "vision", "embed", v)
			if err != nil {
				t.Fatalf("lookup v%d: %v", v, err)
			}
			return f
		}
		resolve := func(r functions.Route) (*ent.Function, error) {
			_, f, err := w.fn.Resolve(ctx, r)
			return f, err
		}
		mustResolve := func(r functions.Route, want string) {
			t.Helper()
			f, err := resolve(r)
			if err != nil || f.ID != want {
				t.Fatalf("resolve %s: %v %v, want %s", r.Prefix(), f, err, want)
			}
		}
		if lookup(0).ID != e2.ID || lookup(1).ID != e1.ID || lookup(2).ID != e2.ID {
			t.Fatal("lookups do not reach their versions")
		}
		if _, err := w.fn.Lookup(ctx, "vision", "nothing", 0); code(err) != fault.NotFound {
			t.Errorf("looking up no such function: %v", err)
		}
		if _, err := w.fn.Lookup(ctx, "nothing", "embed", 0); code(err) != fault.NotFound {
			t.Errorf("looking up no such app: %v", err)
		}
		mustResolve(functions.Route{Group: functions.GroupJob, Name: "embed"}, e2.ID)
		mustResolve(functions.Route{Group: functions.GroupJob, Name: "embed", Version: 1}, e1.ID)
		mustResolve(functions.Route{Group: functions.GroupEndpoint, Name: "predict"}, p2.ID)
		if _, err := resolve(functions.Route{Group: functions.GroupJob, Name: "predict"}); code(err) != fault.NotFound {
			t.Errorf("an endpoint under /job: %v", err)
		}

		a, err := w.fn.Rollback(ctx, v1.ID, 0)
		if err != nil || a.LiveVersion != 1 || a.Version != 2 {
			t.Fatalf("rollback: %+v %v", a, err)
		}
		if lookup(0).ID != e1.ID {
			t.Error("a lookup after the rollback does not reach version 1")
		}
		mustResolve(functions.Route{Group: functions.GroupEndpoint, Name: "predict"}, p1.ID)
		if _, err := w.fn.Rollback(ctx, v1.ID, 0); code(err) != fault.BadUserInput {
			t.Errorf("rollback below the oldest version: %v", err)
		}
		if a, err = w.fn.Rollback(ctx, v1.ID, 2); err != nil || a.LiveVersion != 2 {
			t.Fatalf("rollback to 2: %+v %v", a, err)
		}

		a, err = w.fn.StopVersion(ctx, v1.ID, 1)
		if err != nil || a.State != app.StateDEPLOYED || a.LiveVersion != 2 {
			t.Fatalf("stopping version 1: %+v %v", a, err)
		}
		if got, _ := w.fn.Await(ctx, c1.ID, 0); got.State != task.StateCANCELLED {
			t.Errorf("version 1's call is %s after its version stopped", got.State)
		}
		if got, _ := w.fn.Await(ctx, c2.ID, 0); got.State != task.StatePENDING {
			t.Errorf("version 2's call is %s after version 1 stopped", got.State)
		}
		for _, c := range w.containers(t, e1.ID) {
			if c.State != container.StateSTOPPED {
				t.Errorf("version 1's container %s is %s", c.ID, c.State)
			}
		}
		if _, err := resolve(functions.Route{Group: functions.GroupJob, Name: "embed", Version: 1}); code(err) != fault.NotFound {
			t.Errorf("resolving a stopped version: %v", err)
		}
		if _, err := w.fn.Lookup(ctx, "vision", "embed", 1); code(err) != fault.NotFound {
			t.Errorf("looking up a stopped version: %v", err)
		}
		if _, err := w.fn.Call(ctx, e1.ID, args("late")); code(err) != fault.BadUserInput {
			t.Errorf("calling a stopped version: %v", err)
		}
		if _, err := w.fn.Rollback(ctx, v1.ID, 1); code(err) != fault.BadUserInput {
			t.Errorf("rolling back to a stopped version: %v", err)
		}
		mustResolve(functions.Route{Group: functions.GroupJob, Name: "embed"}, e2.ID)

		// Stopping the live version moves the alias to the newest
		// serving one; stopping the last stops the app.
		v3 := w.deployVersion(t, ctx, "vision", codeHash, fns()...)
		if v3.ID != v1.ID || v3.Version != 3 {
			t.Fatalf("third deploy: %+v", v3)
		}
		if a, err = w.fn.StopVersion(ctx, v1.ID, 3); err != nil || a.LiveVersion != 2 || a.State != app.StateDEPLOYED {
			t.Fatalf("stopping the live version 3: %+v %v", a, err)
		}
		if a, err = w.fn.StopVersion(ctx, v1.ID, 2); err != nil || a.State != app.StateSTOPPED {
			t.Fatalf("stopping the last version: %+v %v", a, err)
		}
		if got, _ := w.fn.Await(ctx, c2.ID, 0); got.State != task.StateCANCELLED {
			t.Errorf("version 2's call is %s after its version stopped", got.State)
		}
		if _, err := resolve(functions.Route{Group: functions.GroupJob, Name: "embed"}); code(err) != fault.NotFound {
			t.Errorf("resolving a stopped app: %v", err)
		}
		if _, err := w.fn.StopVersion(ctx, v1.ID, 9); err != nil {
			t.Errorf("stopping a version of a stopped app: %v", err)
		}
		// A deploy after the app stopped starts a new one.
		again := w.deployVersion(t, ctx, "vision", codeHash, fns()...)
		if again.ID == v1.ID || again.Version != 1 {
			t.Fatalf("deploy after a stop: %+v", again)
		}
		if _, err := w.fn.StopVersion(ctx, again.ID, 5); code(err) != fault.NotFound {
			t.Errorf("stopping a version never deployed: %v", err)
		}
		member := w.tn.AddMember(t, "bob")
		if _, err := w.fn.StopVersion(w.tn.As(member), again.ID, 1); code(err) != fault.Forbidden {
			t.Errorf("another member stops the admin's version: %v", err)
		}
		if _, err := w.fn.Deploy(w.tn.As(member), spec("vision", codeHash, functions.FunctionSpec{Name: "embed"})); code(err) != fault.Forbidden {
			t.Errorf("another member deploys over the admin's app: %v", err)
		}
	})
}

// TestDeploymentNamesClash: a URL names one function: another deployed
// app of the environment may not serve the same name in the same group,
// nor two functions of one version.
func TestDeploymentNamesClash(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		endpoint := functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT}
		vision := w.deployVersion(t, ctx, "vision", codeHash, endpoint)
		_, err := w.fn.Deploy(ctx, spec("other", codeHash, endpoint))
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Field != "functions[0].deployment" || !strings.Contains(fe.Message, "vision") {
			t.Fatalf("a clash with app vision: %v", err)
		}
		if n, _ := w.tn.DB.Ent.App.Query().Where(app.Name("other")).Count(fixture.Sys()); n != 0 {
			t.Fatal("a refused deploy stored its app")
		}
		// Another group is another URL; name= gives another name.
		w.deployVersion(t, ctx, "other", codeHash, functions.FunctionSpec{Name: "predict"},
			functions.FunctionSpec{Name: "predict2", Kind: function.KindENDPOINT, Deployment: "guess"})
		if f, err := w.fn.Lookup(ctx, "other", "guess", 0); err != nil || f.Name != "predict2" {
			t.Errorf("looking up by deployment name: %+v %v", f, err)
		}
		// A new version of the same app keeps its names.
		w.deployVersion(t, ctx, "vision", codeHash, endpoint)
		// Ephemeral apps have URLs of their own.
		w.deploy(t, ctx, "scratch", endpoint)
		// One version names a URL once.
		_, err = w.fn.Deploy(ctx, spec("third", codeHash,
			functions.FunctionSpec{Name: "a", Kind: function.KindENDPOINT, Deployment: "x"},
			functions.FunctionSpec{Name: "b", Kind: function.KindASGI, Deployment: "x"}))
		if !errors.As(err, &fe) || fe.Field != "functions[1].deployment" {
			t.Fatalf("one URL for two functions: %v", err)
		}
		// Once vision stops, its names are free.
		if _, err := w.fn.StopApp(ctx, vision.ID, ""); err != nil {
			t.Fatal(err)
		}
		w.deployVersion(t, ctx, "third", codeHash, endpoint)
	})
}

// TestDeployRefusesBadDeployments: each bad deployment option is refused
// on its field, by deploys and ephemeral deploys alike, and nothing is
// written (no app, no version, no function, no audit event).
func TestDeployRefusesBadDeployments(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		w.fn.Secrets = knownSecrets{"hf": true}
		ctx := w.tn.AsAdmin()
		w.deployVersion(t, ctx, "vision", codeHash, functions.FunctionSpec{Name: "embed"})
		for _, tc := range []struct {
			name  string
			fns   []functions.FunctionSpec
			field string
		}{
			{"unknown kind", []functions.FunctionSpec{{Name: "f", Kind: "LAMBDA"}}, "functions[0].kind"},
			{"cron without a schedule", []functions.FunctionSpec{{Name: "f", Kind: function.KindCRON}}, "functions[0].cron"},
			{"schedule on a function", []functions.FunctionSpec{{Name: "f", Cron: "@hourly"}}, "functions[0].cron"},
			{"bad schedule", []functions.FunctionSpec{{Name: "f", Kind: function.KindCRON, Cron: "every day"}}, "functions[0].cron"},
			{"time zone", []functions.FunctionSpec{{Name: "f", Kind: function.KindCRON, Cron: "TZ=Europe/Paris 0 * * * *"}}, "functions[0].cron"},
			{"bad deployment name", []functions.FunctionSpec{{Name: "f", Deployment: "a/b"}}, "functions[0].deployment"},
			{"one URL twice", []functions.FunctionSpec{{Name: "f", Kind: function.KindENDPOINT}, {Name: "g", Kind: function.KindENDPOINT, Deployment: "f"}}, "functions[1].deployment"},
			{"sync timeout too long", []functions.FunctionSpec{{Name: "f", Kind: function.KindENDPOINT, SyncTimeoutSeconds: 86401}}, "functions[0].syncTimeoutSeconds"},
			{"negative sync timeout", []functions.FunctionSpec{{Name: "f", Kind: function.KindENDPOINT, SyncTimeoutSeconds: -1}}, "functions[0].syncTimeoutSeconds"},
			{"unknown method", []functions.FunctionSpec{{Name: "f", Kind: function.KindENDPOINT, HTTPMethod: "FETCH"}}, "functions[0].httpMethod"},
			{"public cron", []functions.FunctionSpec{{Name: "f", Kind: function.KindCRON, Cron: "@hourly", Public: true}}, "functions[0].public"},
			{"missing secret", []functions.FunctionSpec{{Name: "f", Secrets: []string{"hf", "nope"}}}, "functions[0].secrets"},
			{"secret twice", []functions.FunctionSpec{{Name: "f", Secrets: []string{"hf", "hf"}}}, "functions[0].secrets[1]"},
			{"public then bad", []functions.FunctionSpec{{Name: "f", Kind: function.KindENDPOINT, Public: true}, {Name: "g", Module: "a..b"}}, "functions[1].module"},
		} {
			for _, deploy := range []func(context.Context, functions.AppSpec) (*ent.App, error){w.fn.Deploy, w.fn.DeployEphemeral} {
				_, err := deploy(ctx, spec("vision", codeHash, tc.fns...))
				var fe *fault.Error
				if !errors.As(err, &fe) || fe.Field != tc.field || fe.Code != fault.BadUserInput {
					t.Errorf("%s: got %v, want an error on %s", tc.name, err, tc.field)
				}
			}
		}
		a, err := w.tn.DB.Ent.App.Query().WithFunctions().All(fixture.Sys())
		if err != nil || len(a) != 1 || a[0].Version != 1 || len(a[0].Edges.Functions) != 1 {
			t.Fatalf("refused deploys wrote: %v %+v", err, a)
		}
		if n, _ := w.tn.DB.Ent.AuditEvent.Query().Where(auditevent.Action("deployment.public")).Count(fixture.Sys()); n != 0 {
			t.Fatalf("%d public deployments audited by refused deploys", n)
		}
	})
}

// TestIdempotencyKey: a put whose key the app has seen returns the first
// task, also when puts race; only task queues take puts.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "jobs", codeHash, functions.FunctionSpec{Name: "resize", Kind: function.KindTASK_QUEUE, Retries: 3},
			functions.FunctionSpec{Name: "plain"})
		q, plain := fnNamed(t, a.Edges.Functions, "resize"), fnNamed(t, a.Edges.Functions, "plain")
		first, created, err := w.fn.Put(ctx, q.ID, args("a"), functions.CallOptions{IdempotencyKey: "k1"})
		if err != nil || !created || first.Source != task.SourceQUEUE || first.IdempotencyKey != "k1" || first.MaxAttempts != 4 {
			t.Fatalf("first put: %+v %v %v", first, created, err)
		}
		again, created, err := w.fn.Put(ctx, q.ID, args("b"), functions.CallOptions{IdempotencyKey: "k1", Source: task.SourceHTTP})
		if err != nil || created || again.ID != first.ID {
			t.Fatalf("a repeated key: %+v %v %v", again, created, err)
		}
		// The key is the app's.
		if c, err := w.fn.CallWith(ctx, plain.ID, args("c"), functions.CallOptions{IdempotencyKey: "k1"}); err != nil || c.ID != first.ID {
			t.Fatalf("a call with the app's key: %+v %v", c, err)
		}
		// A caller without a token gets only the function's own calls.
		if c, err := w.fn.CallWith(ctx, plain.ID, args("c"), functions.CallOptions{IdempotencyKey: "k1", Anonymous: true}); code(err) != fault.BadUserInput {
			t.Fatalf("an anonymous call with another function's key: %+v %v", c, err)
		}
		if again, created, err := w.fn.Put(ctx, q.ID, args("b"), functions.CallOptions{IdempotencyKey: "k1", Anonymous: true}); err != nil || created || again.ID != first.ID {
			t.Fatalf("an anonymous put with its own key: %+v %v %v", again, created, err)
		}
		one, _, _ := w.fn.Put(ctx, q.ID, args("x"), functions.CallOptions{})
		two, _, _ := w.fn.Put(ctx, q.ID, args("x"), functions.CallOptions{})
		if one.ID == two.ID {
			t.Fatal("puts without a key returned the same task")
		}
		var wg sync.WaitGroup
		ids := make([]string, 8)
		made := make([]bool, 8)
		errs := make([]error, 8)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t, c, err := w.fn.Put(ctx, q.ID, args("burst"), functions.CallOptions{IdempotencyKey: "burst"})
				if err == nil {
					ids[i], made[i] = t.ID, c
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		n := 0
		for i := range ids {
			if errs[i] != nil || ids[i] != ids[0] {
				t.Fatalf("concurrent put %d: %s %v (first %s)", i, ids[i], errs[i], ids[0])
			}
			if made[i] {
				n++
			}
		}
		rows, _ := w.tn.DB.Ent.Task.Query().Where(task.IdempotencyKey("burst")).Count(fixture.Sys())
		if n != 1 || rows != 1 {
			t.Fatalf("concurrent puts with one key: %d created, %d rows", n, rows)
		}
		if _, _, err := w.fn.Put(ctx, plain.ID, args("x"), functions.CallOptions{}); code(err) != fault.BadUserInput {
			t.Errorf("a put on a plain function: %v", err)
		}
		if _, _, err := w.fn.Put(ctx, q.ID, args("x"), functions.CallOptions{IdempotencyKey: strings.Repeat("k", 201)}); code(err) != fault.BadUserInput {
			t.Errorf("a key of 201 characters: %v", err)
		}
	})
}

// TestDeadLetters: a task queue's item that fails every attempt ends
// DEAD (ended and failed: its map counts it), a plain call ERROR; its
// owner or an admin requeues it with a fresh attempt count.
func TestDeadLetters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "jobs", codeHash, functions.FunctionSpec{Name: "resize", Kind: function.KindTASK_QUEUE, Retries: 1},
			functions.FunctionSpec{Name: "once", Kind: function.KindTASK_QUEUE, MaxContainers: 1})
		q, once := fnNamed(t, a.Edges.Functions, "resize"), fnNamed(t, a.Edges.Functions, "once")
		item, _, err := w.fn.Put(ctx, q.ID, args("x"), functions.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := w.runner(t, w.containers(t, q.ID)[0])
		got, _ := w.claim(t, r, 1)
		if len(got) != 1 || got[0].Source != task.SourceQUEUE {
			t.Fatalf("claimed %+v", got)
		}
		w.claim(t, r, 0, failed(got[0], "first"))
		w.clock.Advance(2 * time.Second)
		got, _ = w.claim(t, r, 1)
		w.claim(t, r, 0, failed(got[0], "second"))
		end, err := w.fn.Await(ctx, item.ID, 10*time.Second)
		if err != nil || end.State != task.StateDEAD || !functions.Ended(end.State) || end.ErrorMessage != "second" || end.FinishedAt == nil {
			t.Fatalf("after the last attempt: %+v %v", end, err)
		}
		member := w.tn.AddMember(t, "bob")
		if _, err := w.fn.Requeue(w.tn.As(member), item.ID); code(err) != fault.Forbidden {
			t.Errorf("another member requeues: %v", err)
		}
		back, err := w.fn.Requeue(ctx, item.ID)
		if err != nil || back.State != task.StatePENDING || back.Attempt != 0 || back.NotBefore != nil || back.FinishedAt != nil {
			t.Fatalf("requeued: %+v %v", back, err)
		}
		got, _ = w.claim(t, r, 1)
		if len(got) != 1 || got[0].ID != item.ID || got[0].Attempt != 1 {
			t.Fatalf("claim after the requeue: %+v", got)
		}
		w.claim(t, r, 0, ok(got[0], "done"))
		if done, _ := w.fn.Await(ctx, item.ID, 0); done.State != task.StateCOMPLETE {
			t.Fatalf("requeued item: %s", done.State)
		}
		if _, err := w.fn.Requeue(ctx, item.ID); code(err) != fault.BadUserInput {
			t.Errorf("requeue of a complete task: %v", err)
		}

		// A map's dead item counts as failed and ends the map.
		m, err := w.fn.Map(ctx, once.ID, []functions.Payload{args("y")})
		if err != nil {
			t.Fatal(err)
		}
		ro := w.runner(t, w.containers(t, once.ID)[0])
		got, _ = w.claim(t, ro, 1)
		w.claim(t, ro, 0, failed(got[0], "no"))
		m2, items, err := w.fn.MapResults(ctx, m.ID, 0, 10, 0)
		if err != nil || len(items) != 1 || items[0].State != task.StateDEAD || m2.Failed != 1 || m2.FinishedAt == nil {
			t.Fatalf("map of a dead item: %+v %d items %v", m2, len(items), err)
		}
	})
}

// TestResolve: a URL reaches a serving function of the caller's tenant
// and environment, or a public one by its /pub form without a token
// (acting for its owner); anything else is NOT_FOUND alike.
func TestResolve(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "web", codeHash, functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT},
			functions.FunctionSpec{Name: "open", Kind: function.KindASGI, Public: true})
		open := fnNamed(t, a.Edges.Functions, "open")
		ev, err := w.tn.DB.Ent.AuditEvent.Query().Where(auditevent.Action("deployment.public")).All(fixture.Sys())
		if err != nil || len(ev) != 1 || ev[0].Target != open.ID || ev[0].ActorID != w.tn.Admin.ID {
			t.Fatalf("public deployment audit: %+v %v", ev, err)
		}
		route := func(p string) functions.Route {
			t.Helper()
			r, ok := functions.ParseRoute(p)
			if !ok {
				t.Fatalf("no route %s", p)
			}
			return r
		}
		for _, p := range []string{"/endpoint/predict", "/endpoint/predict/v1/x", "/endpoint/open"} {
			if _, f, err := w.fn.Resolve(ctx, route(p)); err != nil || f.Edges.App == nil {
				t.Errorf("resolving %s: %v", p, err)
			}
		}
		pctx, f, err := w.fn.Resolve(context.Background(), route("/pub/acme/main/endpoint/open/docs"))
		if err != nil || f.ID != open.ID {
			t.Fatalf("resolving the public form: %v", err)
		}
		if v := viewer.FromContext(pctx); v == nil || v.UserID != w.tn.Admin.ID || v.TenantID != w.tn.ID || v.EnvironmentID != w.tn.Env || v.Admin || v.System {
			t.Fatalf("a public call acts as %+v, want the owner", v)
		}
		// A public function's task is readable by its ID alone; others' not.
		pub, err := w.fn.CallWith(pctx, open.ID, args("{}"), functions.CallOptions{Source: task.SourceHTTP})
		if err != nil || pub.Source != task.SourceHTTP || pub.OwnerID != w.tn.Admin.ID {
			t.Fatalf("a public call: %+v %v", pub, err)
		}
		priv, _ := w.fn.Call(ctx, fnNamed(t, a.Edges.Functions, "predict").ID, args("{}"))
		if got, err := w.fn.Task(context.Background(), pub.ID); err != nil || got.ID != pub.ID {
			t.Errorf("reading a public function's task without a token: %v", err)
		}
		if _, err := w.fn.Task(context.Background(), priv.ID); code(err) != fault.NotFound {
			t.Errorf("reading a private task without a token: %v", err)
		}
		// A signed-in caller's call of the public function (from Python,
		// with its arguments) is not handed to whoever guesses its ID.
		own, err := w.fn.Call(ctx, open.ID, args("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.fn.Task(context.Background(), own.ID); code(err) != fault.NotFound {
			t.Errorf("reading a signed-in call of a public function without a token: %v", err)
		}
		evil := fixture.NewTenant(t, w.tn.DB, fixture.TenantOptions{Slug: "evil"})
		if _, err := w.fn.Task(evil.AsAdmin(), priv.ID); code(err) != fault.NotFound {
			t.Errorf("reading another tenant's task: %v", err)
		}
		staging, err := w.tn.DB.Ent.Environment.Create().SetTenantID(w.tn.ID).SetName("staging").Save(fixture.Sys())
		if err != nil {
			t.Fatal(err)
		}
		inStaging := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: w.tn.Admin.ID, TenantID: w.tn.ID, EnvironmentID: staging.ID, Admin: true})
		refuse := func(name string, ctx context.Context, r functions.Route) {
			t.Helper()
			if _, _, err := w.fn.Resolve(ctx, r); code(err) != fault.NotFound {
				t.Errorf("%s (%s): %v, want NOT_FOUND", name, r.Prefix(), err)
			}
		}
		refuse("not public", context.Background(), route("/pub/acme/main/endpoint/predict"))
		refuse("no such environment", context.Background(), route("/pub/acme/nope/endpoint/open"))
		refuse("other environment, public", context.Background(), route("/pub/acme/staging/endpoint/open"))
		refuse("no such tenant", context.Background(), route("/pub/nobody/main/endpoint/open"))
		refuse("no token", context.Background(), route("/endpoint/predict"))
		refuse("other tenant", evil.AsAdmin(), route("/endpoint/predict"))
		refuse("other tenant, public", evil.AsAdmin(), route("/endpoint/open"))
		refuse("other environment", inStaging, route("/endpoint/predict"))
		refuse("no such version", ctx, route("/endpoint/predict/v2"))
		refuse("wrong group", ctx, route("/job/predict"))
		refuse("box", ctx, route("/box/predict"))
		refuse("no such name", ctx, route("/endpoint/nothing"))

		w.deployVersion(t, ctx, "web", codeHash, functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT},
			functions.FunctionSpec{Name: "open", Kind: function.KindASGI, Public: true})
		if _, err := w.fn.StopVersion(ctx, a.ID, 1); err != nil {
			t.Fatal(err)
		}
		refuse("stopped version", ctx, route("/endpoint/predict/v1"))
		refuse("stopped public version", context.Background(), route("/pub/acme/main/endpoint/open/v1"))
		if _, f, err := w.fn.Resolve(ctx, route("/endpoint/predict")); err != nil || f.Version != 2 {
			t.Errorf("the alias after v1 stopped: %v", err)
		}

		// An ephemeral app's deployment answers by its app ID.
		e := w.deploy(t, ctx, "scratch", functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT})
		r := functions.Route{Group: functions.GroupEndpoint, Name: "predict", AppID: e.ID}
		if _, f, err := w.fn.Resolve(ctx, r); err != nil || f.AppID != e.ID || f.CodeHash != codeHash || f.Version != 1 {
			t.Fatalf("resolving the ephemeral app's URL: %+v %v", f, err)
		}
		refuse("other tenant's ephemeral app", evil.AsAdmin(), r)
		if _, err := w.fn.StopApp(ctx, e.ID, ""); err != nil {
			t.Fatal(err)
		}
		refuse("stopped ephemeral app", ctx, r)
	})
}

// TestSecretsAndCron: a container gets the names of its function's
// secrets; a cron function's first tick is set at deploy.
func TestSecretsAndCron(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		w.fn.Secrets = knownSecrets{"hf": true, "db": true}
		ctx := w.tn.AsAdmin()
		const every = "*/15 * * * *"
		a := w.deployVersion(t, ctx, "vision", codeHash, functions.FunctionSpec{Name: "download", Secrets: []string{"hf", "db"}},
			functions.FunctionSpec{Name: "plain"}, functions.FunctionSpec{Name: "refresh", Kind: function.KindCRON, Cron: every})
		for name, want := range map[string]string{"download": "[hf db]", "plain": "[]"} {
			f := fnNamed(t, a.Edges.Functions, name)
			if _, err := w.fn.Call(ctx, f.ID, args("x")); err != nil {
				t.Fatal(err)
			}
			if got := w.jobOf(t, f.ID).Spec.Runner.Secrets; fmtList(got) != want {
				t.Errorf("%s's container names secrets %v, want %s", name, got, want)
			}
		}
		cron := fnNamed(t, a.Edges.Functions, "refresh")
		want := functions.NextRuns(every, w.clock.Now(), 1)[0]
		if cron.NextRunAt == nil || !cron.NextRunAt.Equal(want) || cron.Cron != every {
			t.Fatalf("cron function: next run %v, want %v", cron.NextRunAt, want)
		}
		if p := fnNamed(t, a.Edges.Functions, "plain"); p.NextRunAt != nil {
			t.Errorf("a plain function has a next run %v", p.NextRunAt)
		}
		// A tick's call has no arguments.
		tick, err := w.fn.CallWith(ctx, cron.ID, functions.Payload{}, functions.CallOptions{Source: task.SourceCRON})
		if err != nil || tick.Source != task.SourceCRON {
			t.Fatalf("a tick's call: %+v %v", tick, err)
		}
		r := w.runner(t, w.containers(t, cron.ID)[0])
		got, _ := w.claim(t, r, 1)
		if len(got) != 1 || got[0].Source != task.SourceCRON || len(got[0].Args.Data) != 0 {
			t.Fatalf("claimed tick %+v", got)
		}
	})
}

func fmtList(s []string) string { return "[" + strings.Join(s, " ") + "]" }

// TestRealtimeContainer: a WebSocket gets a ready container of its
// function, one started when none runs (its job declaring the ws port),
// waiting for it until it is ready or the wait ends.
func TestRealtimeContainer(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "chat", codeHash, functions.FunctionSpec{Name: "stream", Kind: function.KindREALTIME},
			functions.FunctionSpec{Name: "plain"})
		f, plain := fnNamed(t, a.Edges.Functions, "stream"), fnNamed(t, a.Edges.Functions, "plain")
		if _, err := w.fn.RealtimeContainer(ctx, f, 20*time.Millisecond); code(err) != fault.Unavailable {
			t.Fatalf("no ready container in time: %v", err)
		}
		cs := w.containers(t, f.ID)
		if len(cs) != 1 {
			t.Fatalf("%d containers started, want 1", len(cs))
		}
		ports := w.jobOf(t, f.ID).Spec.Services[0].Ports
		if len(ports) != 1 || ports[0].Name != functions.RealtimePort || ports[0].Port != 0 {
			t.Fatalf("realtime job's ports %+v", ports)
		}
		type answer struct {
			job string
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			j, err := w.fn.RealtimeContainer(ctx, f, 20*time.Second)
			ch <- answer{j, err}
		}()
		r := w.runner(t, cs[0])
		w.claim(t, r, 0) // the runner reports its start: ready
		select {
		case got := <-ch:
			if got.err != nil || got.job != cs[0].JobID {
				t.Fatalf("waiting for a container: %+v", got)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the ready container did not wake the waiter")
		}
		if j, err := w.fn.RealtimeContainer(ctx, f, 0); err != nil || j != cs[0].JobID || len(w.containers(t, f.ID)) != 1 {
			t.Fatalf("a second connection: %s %v", j, err)
		}
		if _, err := w.fn.RealtimeContainer(ctx, plain, time.Second); code(err) != fault.BadUserInput {
			t.Errorf("a plain function's container: %v", err)
		}
	})
}

// TestAnonymousBacklog: callers without a token (public URLs) cannot fill
// the database: past MaxAnonymousBacklog waiting calls theirs are
// refused, while signed-in callers' still go in.
func TestAnonymousBacklog(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "open", codeHash, functions.FunctionSpec{Name: "predict", Kind: function.KindENDPOINT, Public: true})
		f := fnNamed(t, a.Edges.Functions, "predict")
		items := make([]functions.Payload, functions.MaxAnonymousBacklog-1)
		for i := range items {
			items[i] = args("x")
		}
		if _, err := w.fn.Map(ctx, f.ID, items); err != nil {
			t.Fatal(err)
		}
		anon := functions.CallOptions{Source: task.SourceHTTP, Anonymous: true}
		if _, err := w.fn.CallWith(ctx, f.ID, args("last"), anon); err != nil {
			t.Fatalf("the last anonymous call with room: %v", err)
		}
		_, err := w.fn.CallWith(ctx, f.ID, args("over"), anon)
		if fs := fault.Classify(err); len(fs) == 0 || fs[0].Code != fault.RateLimited {
			t.Fatalf("an anonymous call past the backlog: %v, want RATE_LIMITED", err)
		}
		if _, err := w.fn.CallWith(ctx, f.ID, args("signed in"), functions.CallOptions{Source: task.SourceHTTP}); err != nil {
			t.Fatalf("a signed-in call past the anonymous backlog: %v", err)
		}
	})
}

// TestFirstDeploysRace: deploys of a new app name at the same instant
// make one app; a deploy that lost the race is told to try again.
func TestFirstDeploysRace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = w.fn.Deploy(ctx, spec("race", codeHash, functions.FunctionSpec{Name: "embed"}))
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
				continue
			}
			if fs := fault.Classify(err); len(fs) == 0 || fs[0].Code != fault.Unavailable {
				t.Errorf("a deploy that lost the race: %v, want UNAVAILABLE", err)
			}
		}
		apps, err := w.tn.DB.Ent.App.Query().Where(app.Name("race"), app.StateEQ(app.StateDEPLOYED)).All(fixture.Sys())
		if err != nil || len(apps) != 1 || ok == 0 || apps[0].Version != ok {
			t.Fatalf("%d deployed apps named race (%v), %d deploys succeeded, version %v; want one app with a version per success", len(apps), err, ok, apps)
		}
	})
}

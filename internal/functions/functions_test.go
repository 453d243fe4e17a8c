package functions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/wire"
)

func code(err error) fault.Code {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return ""
}

// TestDeployRefusesBadInput: each bad app is refused with a code and a
// field, and nothing is stored.
func TestDeployRefusesBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		good := func() functions.AppSpec {
			return functions.AppSpec{Name: "vision", CodeHash: codeHash, Functions: []functions.FunctionSpec{
				{Name: "embed", Module: "app", Qualname: "embed", Queue: "default"}}}
		}
		for _, tc := range []struct {
			name  string
			edit  func(*functions.AppSpec)
			field string
		}{
			{"bad app name", func(a *functions.AppSpec) { a.Name = "no spaces" }, "name"},
			{"code never uploaded", func(a *functions.AppSpec) { a.CodeHash = fmt.Sprintf("%064x", 7) }, "codeHash"},
			{"not a hash", func(a *functions.AppSpec) { a.CodeHash = "abc" }, "codeHash"},
			{"no functions", func(a *functions.AppSpec) { a.Functions = nil }, "functions"},
			{"bad function name", func(a *functions.AppSpec) { a.Functions[0].Name = "1x" }, "functions[0].name"},
			{"bad module", func(a *functions.AppSpec) { a.Functions[0].Module = "a..b" }, "functions[0].module"},
			{"twice", func(a *functions.AppSpec) { a.Functions = append(a.Functions, a.Functions[0]) }, "functions[1].name"},
			{"unknown queue", func(a *functions.AppSpec) { a.Functions[0].Queue = "nope" }, "functions[0].queue"},
			{"bad gpu", func(a *functions.AppSpec) { a.Functions[0].GPU = "H100:zero" }, "functions[0].gpu"},
			{"memory over the queue's limit", func(a *functions.AppSpec) { a.Functions[0].MemoryMiB = 1 << 40 }, "functions[0].memoryMiB"},
			{"max below keep warm", func(a *functions.AppSpec) { a.Functions[0].KeepWarm = 3; a.Functions[0].MaxContainers = 2 }, "functions[0].maxContainers"},
			{"negative retries", func(a *functions.AppSpec) { a.Functions[0].Retries = -1 }, "functions[0].retries"},
		} {
			spec := good()
			tc.edit(&spec)
			_, err := w.fn.DeployEphemeral(w.tn.AsAdmin(), spec)
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("%s: got %v, want an error on %s", tc.name, err, tc.field)
			}
		}
		if n, _ := w.tn.DB.Ent.App.Query().Count(fixture.Sys()); n != 0 {
			t.Fatalf("%d apps stored by refused deploys", n)
		}
	})
}

// TestParseGPU reads every form of a GPU request.
func TestParseGPU(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		n     int
		types []string
		bad   bool
	}{
		{"", 0, nil, false},
		{"H100", 1, []string{"H100"}, false},
		{"H100:2", 2, []string{"H100"}, false},
		{"H100,A100", 1, []string{"H100", "A100"}, false},
		{"H100,A100:4", 4, []string{"H100", "A100"}, false},
		{"2", 2, nil, false},
		{"H100:0", 0, nil, true},
		{"H100:", 0, nil, true},
		{",", 0, nil, true},
		{"H 100", 0, nil, true},
		{"H100:65", 0, nil, true},
	} {
		n, types, err := functions.ParseGPU(tc.in)
		if (err != nil) != tc.bad || n != tc.n || fmt.Sprint(types) != fmt.Sprint(tc.types) {
			t.Errorf("ParseGPU(%q) = %d %v %v", tc.in, n, types, err)
		}
	}
}

func FuzzParseGPU(f *testing.F) {
	for _, s := range []string{"H100", "H100:2", "A,B:3", "7", ":", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, types, err := functions.ParseGPU(s)
		if err != nil {
			return
		}
		if n < 0 || n > 64 || (n == 0 && len(types) > 0) {
			t.Fatalf("ParseGPU(%q) = %d %v", s, n, types)
		}
	})
}

// TestCallColdThenWarm: the first call starts a container (a job of the
// function's queue carrying the runner), waits for it and carries its
// start phases; a second call on the ready container pays for none.
func TestCallColdThenWarm(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed"})
		f := a.Edges.Functions[0]
		first, err := w.fn.Call(ctx, f.ID, args("one"))
		if err != nil {
			t.Fatal(err)
		}
		cs := w.containers(t, f.ID)
		if len(cs) != 1 {
			t.Fatalf("%d containers after a first call, want 1", len(cs))
		}
		j, err := w.tn.DB.Ent.Job.Get(fixture.Sys(), cs[0].JobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Spec.Runner == nil || j.Spec.Runner.ContainerID != cs[0].ID || j.Spec.Runner.CodeHash != codeHash || j.OwnerID != w.tn.Admin.ID {
			t.Fatalf("container job %+v", j.Spec)
		}
		if reason, _ := w.fn.WaitReason(ctx, first); reason == "" {
			t.Fatal("a waiting call gives no reason")
		}
		w.clock.Advance(time.Second)
		r := w.runner(t, cs[0])
		got, exit := w.claim(t, r, 4)
		if exit || len(got) != 1 || got[0].ID != first.ID || string(got[0].Args.Data) != "one" || got[0].Attempt != 1 {
			t.Fatalf("claim = %+v exit %v", got, exit)
		}
		w.claim(t, r, 0, ok(got[0], "ONE"))
		done, err := w.fn.Await(ctx, first.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if done.State != task.StateCOMPLETE || string(functions.ResultOf(done).Data) != "ONE" {
			t.Fatalf("first call %s %q", done.State, done.Result)
		}
		for name, p := range map[string]*time.Time{"scheduled": done.ScheduledAt, "image ready": done.ImageReadyAt,
			"code fetched": done.CodeFetchedAt, "process started": done.ProcessStartedAt, "imported": done.ImportedAt,
			"started": done.StartedAt, "finished": done.FinishedAt} {
			if p == nil {
				t.Errorf("the cold call has no %s phase", name)
			}
		}
		w.clock.Advance(time.Second)
		second, err := w.fn.Call(ctx, f.ID, args("two"))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(w.containers(t, f.ID)); n != 1 {
			t.Fatalf("%d containers with one ready and idle, want 1", n)
		}
		got, _ = w.claim(t, r, 4)
		if len(got) != 1 || got[0].ID != second.ID {
			t.Fatalf("second claim %+v", got)
		}
		w.claim(t, r, 0, ok(got[0], "TWO"))
		warm, _ := w.fn.Await(ctx, second.ID, 0)
		if warm.State != task.StateCOMPLETE || warm.ScheduledAt != nil || warm.ImportedAt != nil || warm.StartedAt == nil {
			t.Fatalf("warm call: state %s, scheduled %v, imported %v", warm.State, warm.ScheduledAt, warm.ImportedAt)
		}
	})
}

// TestMapInOrder: a map stores its items in input order; results come
// back by index whatever order they finish in, and the map counts them.
func TestMapInOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed", MaxContainers: 1})
		f := a.Edges.Functions[0]
		const n = 1000
		items := make([]functions.Payload, n)
		for i := range items {
			items[i] = args(fmt.Sprint(i))
		}
		m, err := w.fn.Map(ctx, f.ID, items)
		if err != nil {
			t.Fatal(err)
		}
		r := w.runner(t, w.containers(t, f.ID)[0])
		var pending []functions.Claimed
		for {
			got, _ := w.claim(t, r, 100)
			pending = append(pending, got...)
			if len(got) == 0 {
				break
			}
		}
		if len(pending) != n {
			t.Fatalf("claimed %d items, want %d", len(pending), n)
		}
		for i, c := range pending {
			if string(c.Args.Data) != fmt.Sprint(i) {
				t.Fatalf("claim %d has item %q: not in input order", i, c.Args.Data)
			}
		}
		// Finish them backwards, in batches.
		for hi := n; hi > 0; hi -= 250 {
			var done []functions.Outcome
			for i := hi - 1; i >= hi-250; i-- {
				done = append(done, ok(pending[i], "r"+string(pending[i].Args.Data)))
			}
			w.claim(t, r, 0, done...)
		}
		mm, ts, err := w.fn.MapResults(ctx, m.ID, 0, n, 0)
		if mm.Succeeded != n || mm.Failed != 0 {
			t.Fatalf("map counted %d succeeded, %d failed", mm.Succeeded, mm.Failed)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != n || mm.Succeeded != n || mm.FinishedAt == nil {
			t.Fatalf("map results %d, succeeded %d, finished %v", len(ts), mm.Succeeded, mm.FinishedAt)
		}
		for i, tk := range ts {
			if tk.MapIndex != i || string(tk.Result) != fmt.Sprint("r", i) {
				t.Fatalf("result %d is item %d %q", i, tk.MapIndex, tk.Result)
			}
		}
		_, tail, _ := w.fn.MapResults(ctx, m.ID, 990, 5, 0)
		if len(tail) != 5 || tail[0].MapIndex != 990 {
			t.Fatalf("results from 990: %d starting at %d", len(tail), tail[0].MapIndex)
		}
	})
}

// TestRetriesWithBackoff: a failed attempt goes back to the queue after a
// backoff while attempts remain, then the call fails with the last error
// and its traceback.
func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "flaky", Retries: 1})
		f := a.Edges.Functions[0]
		call, _ := w.fn.Call(ctx, f.ID, args("x"))
		r := w.runner(t, w.containers(t, f.ID)[0])
		got, _ := w.claim(t, r, 1)
		w.claim(t, r, 0, failed(got[0], "first"))
		again, _ := w.fn.Await(ctx, call.ID, 0)
		if again.State != task.StatePENDING || again.NotBefore == nil || again.ErrorMessage != "first" {
			t.Fatalf("after a failed first attempt: %s, not before %v, error %q", again.State, again.NotBefore, again.ErrorMessage)
		}
		if reason, _ := w.fn.WaitReason(ctx, again); reason == "" {
			t.Fatal("a call waiting for its retry gives no reason")
		}
		if got, _ := w.claim(t, r, 1); len(got) != 0 {
			t.Fatal("a retry was handed out before its backoff")
		}
		w.clock.Advance(2 * time.Second)
		got, _ = w.claim(t, r, 1)
		if len(got) != 1 || got[0].Attempt != 2 {
			t.Fatalf("retry claim %+v", got)
		}
		w.claim(t, r, 0, failed(got[0], "second"))
		end, _ := w.fn.Await(ctx, call.ID, 0)
		if end.State != task.StateERROR || end.Attempt != 2 || end.ErrorMessage != "second" || functions.FailureOf(end).Traceback == "" {
			t.Fatalf("after the last attempt: %s attempt %d error %q", end.State, end.Attempt, end.ErrorMessage)
		}
	})
}

// TestRunnerBoundaries: a runner settles only its own running calls,
// reads and cancels only its app's calls, and is identified only through
// the node its job is placed on.
func TestRunnerBoundaries(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		one := w.deploy(t, ctx, "one", functions.FunctionSpec{Name: "a"}, functions.FunctionSpec{Name: "b"})
		two := w.deploy(t, ctx, "two", functions.FunctionSpec{Name: "c"})
		fa, fb, fc := one.Edges.Functions[0], one.Edges.Functions[1], two.Edges.Functions[0]
		if fa.Name != "a" {
			fa, fb = fb, fa
		}
		ta, _ := w.fn.Call(ctx, fa.ID, args("a"))
		tb, _ := w.fn.Call(ctx, fb.ID, args("b"))
		tc, _ := w.fn.Call(ctx, fc.ID, args("c"))
		ra := w.runner(t, w.containers(t, fa.ID)[0])
		got, _ := w.claim(t, ra, 10)
		if len(got) != 1 || got[0].ID != ta.ID {
			t.Fatalf("runner of a claimed %+v", got)
		}
		// An outcome for another function's call is dropped.
		w.claim(t, ra, 0, functions.Outcome{TaskID: tb.ID, Attempt: 1, Result: &functions.Payload{Data: []byte("forged")}})
		if b, _ := w.fn.Await(ctx, tb.ID, 0); b.State != task.StatePENDING {
			t.Fatalf("a runner settled another function's call: %s", b.State)
		}
		if _, err := w.fn.RunnerAwait(context.Background(), ra, tc.ID, 0); code(err) != fault.NotFound {
			t.Fatalf("runner read another app's call: %v", err)
		}
		if _, err := w.fn.RunnerCancel(context.Background(), ra, tc.ID); code(err) != fault.NotFound {
			t.Fatalf("runner cancelled another app's call: %v", err)
		}
		if _, err := w.fn.RunnerCall(context.Background(), ra, "c", args("x")); code(err) != fault.NotFound {
			t.Fatalf("runner called another app's function: %v", err)
		}
		if _, err := w.fn.RunnerAwait(context.Background(), ra, tb.ID, 0); err != nil {
			t.Fatalf("runner could not read its app's call: %v", err)
		}
		nested, err := w.fn.RunnerCall(context.Background(), ra, "b", args("y"))
		if err != nil || nested.FunctionID != fb.ID || nested.OwnerID != w.tn.Admin.ID {
			t.Fatalf("nested call: %v %+v", err, nested)
		}
		cs := w.containers(t, fc.ID)
		other := w.tn.AddNode(t, fixture.Node{Name: "n2", Queues: []string{w.tn.DefaultQueue}})
		w.runner(t, cs[0]) // placed on n1
		if _, err := w.fn.RunnerFor(context.Background(), other.ID, wire.RunnerOpen{JobID: cs[0].JobID, Attempt: 1}); code(err) != fault.NotFound {
			t.Fatalf("a node not running the job identified its runner: %v", err)
		}
		plain := w.tn.Submit(t, fixture.Jobs(w.tn.DB, nil), nil, fixture.Service(1, 64))
		if err := w.tn.DB.Ent.Service.Update().SetNodeID(w.node.ID).Exec(fixture.Sys()); err != nil {
			t.Fatal(err)
		}
		if _, err := w.fn.RunnerFor(context.Background(), w.node.ID, wire.RunnerOpen{JobID: plain.ID, Attempt: 1}); code(err) != fault.Forbidden {
			t.Fatalf("a plain job got a runner: %v", err)
		}
	})
}

// TestTenantsIsolated: another tenant sees none of the calls, maps or
// functions of this one, and cannot call them.
func TestTenantsIsolated(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed"})
		f := a.Edges.Functions[0]
		call, _ := w.fn.Call(ctx, f.ID, args("x"))
		m, _ := w.fn.Map(ctx, f.ID, []functions.Payload{args("y")})
		evil := fixture.NewTenant(t, w.tn.DB, fixture.TenantOptions{Slug: "evil"})
		ectx := evil.AsAdmin()
		if _, err := w.fn.Call(ectx, f.ID, args("z")); code(err) != fault.NotFound {
			t.Errorf("call of another tenant's function: %v", err)
		}
		if _, err := w.fn.Await(ectx, call.ID, 0); code(err) != fault.NotFound {
			t.Errorf("await of another tenant's call: %v", err)
		}
		if _, _, err := w.fn.MapResults(ectx, m.ID, 0, 10, 0); code(err) != fault.NotFound {
			t.Errorf("results of another tenant's map: %v", err)
		}
		if _, err := w.fn.CancelTask(ectx, call.ID); code(err) != fault.NotFound {
			t.Errorf("cancel of another tenant's call: %v", err)
		}
		if _, err := w.fn.StopApp(ectx, a.ID, ""); code(err) != fault.NotFound {
			t.Errorf("stop of another tenant's app: %v", err)
		}
		// Knowing the hash of another tenant's code is not having it.
		if _, err := w.fn.DeployEphemeral(ectx, functions.AppSpec{Name: "x", CodeHash: codeHash,
			Functions: []functions.FunctionSpec{{Name: "f", Module: "m", Qualname: "f", Queue: "default"}}}); code(err) != fault.BadUserInput {
			t.Errorf("deploy naming another tenant's code: %v", err)
		}
		if c, _ := w.fn.Await(ctx, call.ID, 0); c.State != task.StatePENDING {
			t.Errorf("the call changed: %s", c.State)
		}
	})
}

// TestCancelAndStop: cancelling a running call stops its container (the
// call cannot be interrupted inside it) and puts the container's other
// calls back without losing an attempt; stopping the app cancels the
// rest and tells runners to leave.
func TestCancelAndStop(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed", MaxContainers: 1})
		f := a.Edges.Functions[0]
		c1, _ := w.fn.Call(ctx, f.ID, args("1"))
		c2, _ := w.fn.Call(ctx, f.ID, args("2"))
		ctr := w.containers(t, f.ID)[0]
		r := w.runner(t, ctr)
		if got, _ := w.claim(t, r, 2); len(got) != 2 {
			t.Fatalf("claimed %d", len(got))
		}
		if _, err := w.fn.CancelTask(ctx, c1.ID); err != nil {
			t.Fatal(err)
		}
		x1, _ := w.fn.Await(ctx, c1.ID, 0)
		x2, _ := w.fn.Await(ctx, c2.ID, 0)
		if x1.State != task.StateCANCELLED || x2.State != task.StatePENDING || x2.Attempt != 0 {
			t.Fatalf("after cancel: %s, other %s attempt %d", x1.State, x2.State, x2.Attempt)
		}
		// Who cancelled, by the email people know, not a user ID.
		if want := "cancelled by " + w.tn.Admin.Email; x1.ErrorMessage != want {
			t.Errorf("the cancelled call says %q, want %q", x1.ErrorMessage, want)
		}
		j, _ := w.tn.DB.Ent.Job.Get(fixture.Sys(), ctr.JobID)
		if j.Status != job.StatusCancelled {
			t.Fatalf("the cancelled call's container job is %s", j.Status)
		}
		if _, exit := w.claim(t, r, 1); !exit {
			t.Fatal("the stopped container's runner was not told to leave")
		}
		if _, err := w.fn.StopApp(ctx, a.ID, "script ended"); err != nil {
			t.Fatal(err)
		}
		if x2, _ = w.fn.Await(ctx, c2.ID, 0); x2.State != task.StateCANCELLED {
			t.Fatalf("after stopping the app the call is %s", x2.State)
		}
		if _, err := w.fn.Call(ctx, f.ID, args("3")); code(err) != fault.BadUserInput {
			t.Fatalf("call of a stopped app: %v", err)
		}
		for _, c := range w.containers(t, f.ID) {
			if c.State != container.StateSTOPPED {
				t.Fatalf("container %s is %s after the app stopped", c.ID, c.State)
			}
		}
	})
}

// TestScaleDownAndKeepWarm: an idle container leaves after the scale-down
// window, unless it is within the function's keep_warm floor.
func TestScaleDownAndKeepWarm(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision",
			functions.FunctionSpec{Name: "cold", ScaledownWindowSeconds: 10},
			functions.FunctionSpec{Name: "warm", ScaledownWindowSeconds: 10, KeepWarm: 1})
		byName := map[string]*ent.Function{}
		for _, f := range a.Edges.Functions {
			byName[f.Name] = f
		}
		warm := w.containers(t, byName["warm"].ID)
		if len(warm) != 1 {
			t.Fatalf("keep_warm 1 started %d containers at deploy", len(warm))
		}
		if n := len(w.containers(t, byName["cold"].ID)); n != 0 {
			t.Fatalf("a function without calls or floor started %d containers", n)
		}
		call, _ := w.fn.Call(ctx, byName["cold"].ID, args("x"))
		rc := w.runner(t, w.containers(t, byName["cold"].ID)[0])
		rw := w.runner(t, warm[0])
		got, _ := w.claim(t, rc, 1)
		w.claim(t, rc, 0, ok(got[0], "y"))
		if _, exit := w.claim(t, rc, 1); exit {
			t.Fatal("a container left before its window")
		}
		w.clock.Advance(11 * time.Second)
		if _, exit := w.claim(t, rc, 1); !exit {
			t.Fatal("an idle container above the floor stayed past its window")
		}
		if _, exit := w.claim(t, rw, 1); exit {
			t.Fatal("the keep-warm container left")
		}
		if c, _ := w.fn.Await(ctx, call.ID, 0); c.State != task.StateCOMPLETE {
			t.Fatalf("call %s", c.State)
		}
	})
}

// TestReconcile: a container whose job ended loses its running calls
// (retried while attempts remain), overdue calls time out, and the floor
// is restored.
func TestReconcile(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed", Retries: 1, TimeoutSeconds: 5})
		f := a.Edges.Functions[0]
		call, _ := w.fn.Call(ctx, f.ID, args("x"))
		ctr := w.containers(t, f.ID)[0]
		r := w.runner(t, ctr)
		w.claim(t, r, 1)
		if err := w.fn.Jobs.MarkEnded(fixture.Sys(), ctr.JobID, job.StatusError, "exit code 137", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if err := w.fn.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, _ := w.fn.Await(ctx, call.ID, 0)
		if c.State != task.StatePENDING || c.ErrorKind != functions.KindContainerLost {
			t.Fatalf("after its container died the call is %s (%s)", c.State, c.ErrorKind)
		}
		cs := w.containers(t, f.ID)
		if cs[0].State != container.StateSTOPPED || len(cs) != 1 {
			t.Fatalf("containers after reconcile: %d, first %s", len(cs), cs[0].State)
		}
		w.clock.Advance(2 * time.Second)
		if err := w.fn.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		cs = w.containers(t, f.ID)
		if len(cs) != 2 {
			t.Fatalf("a waiting call's function has %d containers after reconcile, want a new one", len(cs))
		}
		r2 := w.runner(t, cs[1])
		got, _ := w.claim(t, r2, 1)
		if len(got) != 1 || got[0].Attempt != 2 {
			t.Fatalf("second attempt %+v", got)
		}
		w.clock.Advance(2 * time.Minute) // past the deadline, within the app's heartbeat grace
		if err := w.fn.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, _ = w.fn.Await(ctx, call.ID, 0)
		if c.State != task.StateERROR || c.ErrorKind != functions.KindTimeout {
			t.Fatalf("an overdue last attempt is %s (%s)", c.State, c.ErrorKind)
		}
		j, _ := w.tn.DB.Ent.Job.Get(fixture.Sys(), cs[1].JobID)
		if !jobs.Ended(j.Status) {
			t.Fatalf("the stuck container's job is %s", j.Status)
		}
	})
}

// TestBlobPayloads: large arguments and results travel as blobs of the
// tenant; a result naming a blob the tenant does not hold fails the call
// instead of pointing at another tenant's bytes.
func TestBlobPayloads(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed"})
		f := a.Edges.Functions[0]
		big := w.upload(t, ctx, "payload", make([]byte, functions.InlineLimit+1))
		call, err := w.fn.Call(ctx, f.ID, functions.Payload{Blob: big})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.fn.Call(ctx, f.ID, functions.Payload{Data: make([]byte, functions.InlineLimit+1)}); code(err) != fault.BadUserInput {
			t.Fatalf("an inline payload over the limit: %v", err)
		}
		evil := fixture.NewTenant(t, w.tn.DB, fixture.TenantOptions{Slug: "evil"})
		theirs := w.upload(t, evil.AsAdmin(), "payload", []byte("their secret"))
		second, _ := w.fn.Call(ctx, f.ID, args("x"))
		r := w.runner(t, w.containers(t, f.ID)[0])
		got, _ := w.claim(t, r, 2)
		if len(got) != 2 || got[0].Args.Blob != big {
			t.Fatalf("claimed %+v", got)
		}
		result := w.upload(t, ctx, "payload", []byte("a big result"))
		w.claim(t, r, 0,
			functions.Outcome{TaskID: got[0].ID, Attempt: 1, Result: &functions.Payload{Blob: result}},
			functions.Outcome{TaskID: got[1].ID, Attempt: 1, Result: &functions.Payload{Blob: theirs}})
		c1, _ := w.fn.Await(ctx, call.ID, 0)
		if p := functions.ResultOf(c1); p == nil || p.Blob != result {
			t.Fatalf("blob result: %s %+v", c1.State, p)
		}
		c2, _ := w.fn.Await(ctx, second.ID, 0)
		if c2.State != task.StateERROR || functions.ResultOf(c2) != nil {
			t.Fatalf("a result naming another tenant's blob: %s", c2.State)
		}
	})
}

// TestAbandonedAppStops: an ephemeral app whose client stops sending
// heartbeats is stopped after the grace, its calls cancelled and its
// containers stopped; one that keeps beating stays.
func TestAbandonedAppStops(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		gone := w.deploy(t, ctx, "gone", functions.FunctionSpec{Name: "f", KeepWarm: 1})
		alive := w.deploy(t, ctx, "alive", functions.FunctionSpec{Name: "f", KeepWarm: 1})
		call, _ := w.fn.Call(ctx, gone.Edges.Functions[0].ID, args("x"))
		for k := 0; k < 6; k++ {
			w.clock.Advance(functions.EphemeralGrace / 5)
			if _, err := w.fn.Heartbeat(ctx, alive.ID); err != nil {
				t.Fatal(err)
			}
			if err := w.fn.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		g, _ := w.tn.DB.Ent.App.Get(ctx, gone.ID)
		a, _ := w.tn.DB.Ent.App.Get(ctx, alive.ID)
		if g.State != app.StateSTOPPED || a.State != app.StateRUNNING {
			t.Fatalf("silent app %s, beating app %s", g.State, a.State)
		}
		if c, _ := w.fn.Await(ctx, call.ID, 0); c.State != task.StateCANCELLED {
			t.Fatalf("the silent app's call is %s", c.State)
		}
		for _, c := range w.containers(t, gone.Edges.Functions[0].ID) {
			if c.State != container.StateSTOPPED {
				t.Fatalf("the silent app's container is %s", c.State)
			}
		}
		if got, err := w.fn.Heartbeat(ctx, gone.ID); err != nil || got.State != app.StateSTOPPED {
			t.Fatalf("a late heartbeat: %v %v", got, err)
		}
	})
}

// TestFailedStartsFailCalls: when the function's containers keep ending
// before their runner starts (a missing image, no Python), the waiting
// calls fail saying why instead of waiting forever; a new call tries
// again.
func TestFailedStartsFailCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed", Image: "no-such-image"})
		f := a.Edges.Functions[0]
		call, _ := w.fn.Call(ctx, f.ID, args("x"))
		for k := 0; k < functions.MaxFailedStarts; k++ {
			cs := w.containers(t, f.ID)
			if len(cs) != k+1 {
				t.Fatalf("round %d: %d containers", k, len(cs))
			}
			if c, _ := w.fn.Await(ctx, call.ID, 0); c.State != task.StatePENDING {
				t.Fatalf("round %d: the call is %s before %d failed starts", k, c.State, functions.MaxFailedStarts)
			}
			if err := w.fn.Jobs.MarkEnded(fixture.Sys(), cs[k].JobID, job.StatusError, "pulling no-such-image: not found", w.clock.Now()); err != nil {
				t.Fatal(err)
			}
			w.clock.Advance(time.Second)
			if err := w.fn.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		c, _ := w.fn.Await(ctx, call.ID, 0)
		if c.State != task.StateERROR || c.ErrorKind != functions.KindStartFailed || !strings.Contains(c.ErrorMessage, "no-such-image") {
			t.Fatalf("after %d failed starts the call is %s (%s: %s)", functions.MaxFailedStarts, c.State, c.ErrorKind, c.ErrorMessage)
		}
		if _, err := w.fn.Call(ctx, f.ID, args("y")); err != nil {
			t.Fatal(err)
		}
		if n := len(w.containers(t, f.ID)); n != functions.MaxFailedStarts+1 {
			t.Fatalf("a new call started no container (%d)", n)
		}
	})
}

// TestRefusedStartsWait: a container its owner cannot pay for is refused
// at submission; the waiting call says why, and the reconcile pass tries
// again only after a pause, not on every pass.
func TestRefusedStartsWait(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deploy(t, ctx, "vision", functions.FunctionSpec{Name: "embed"})
		f := a.Edges.Functions[0]
		w.tn.Price(t, w.tn.DefaultQueue, billing.Rates{CPUPerMinute: billing.Unit, Multiplier: 1})
		call, err := w.fn.Call(ctx, f.ID, args("x"))
		if err != nil {
			t.Fatal(err)
		}
		cs := w.containers(t, f.ID)
		if len(cs) != 1 || cs[0].State != container.StateSTOPPED || cs[0].JobID != "" {
			t.Fatalf("containers of an owner without tokens: %+v", cs)
		}
		if reason, _ := w.fn.WaitReason(ctx, call); !strings.Contains(reason, "INSUFFICIENT") && !strings.Contains(strings.ToLower(reason), "token") {
			t.Fatalf("wait reason %q does not say the owner cannot pay", reason)
		}
		for k := 0; k < 3; k++ {
			w.clock.Advance(5 * time.Second)
			if err := w.fn.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(w.containers(t, f.ID)); n != 1 {
			t.Fatalf("%d container submissions within the pause, want 1", n)
		}
		w.clock.Advance(30 * time.Second)
		if err := w.fn.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(w.containers(t, f.ID)); n != 2 {
			t.Fatalf("%d container submissions after the pause, want 2", n)
		}
	})
}

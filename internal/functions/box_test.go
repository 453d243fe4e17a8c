package functions_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/jobspec"
)

// readyBlueprints knows one READY blueprint.
type readyBlueprints struct{}

func (readyBlueprints) Ready(_ context.Context, field, id string) (*ent.Blueprint, error) {
	if id != "bp_ready" {
		return nil, fault.Invalid(field, "no READY blueprint %s", id)
	}
	return &ent.Blueprint{ID: id, Image: "levers9-bp/tn:0123abcd"}, nil
}

// TestDeployBoxes: a box's ports and command are checked and stored, and
// its container's job declares the ports and tells the runner; a
// blueprint gives a function its image; blueprint images are not named
// directly.
func TestDeployBoxes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		box := func(ports []int, cmd ...string) functions.FunctionSpec {
			return functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: ports, Command: cmd}
		}
		many := make([]int, functions.MaxBoxPorts+1)
		for i := range many {
			many[i] = 9000 + i
		}
		for _, tc := range []struct {
			name  string
			f     functions.FunctionSpec
			field string
		}{
			{"box without ports", box(nil), "functions[0].ports"},
			{"too many ports", box(many), "functions[0].ports"},
			{"port 0", box([]int{0}), "functions[0].ports[0]"},
			{"port too high", box([]int{8000, 65536}), "functions[0].ports[1]"},
			{"port twice", box([]int{8000, 8000}), "functions[0].ports[1]"},
			{"NUL in command", box([]int{8000}, "sh", "a\x00b"), "functions[0].command[1]"},
			{"empty program", box([]int{8000}, ""), "functions[0].command"},
			{"ports on a function", functions.FunctionSpec{Name: "f", Ports: []int{8000}}, "functions[0].ports"},
			{"command on an endpoint", functions.FunctionSpec{Name: "f", Kind: function.KindENDPOINT, Command: []string{"sh"}}, "functions[0].command"},
			{"blueprint image", functions.FunctionSpec{Name: "f", Image: "levers9-bp/tn:0123abcd"}, "functions[0].image"},
			{"blueprint image on a host", functions.FunctionSpec{Name: "f", Image: "reg:5000/Levers9-BP/x:1"}, "functions[0].image"},
			{"no blueprints here", functions.FunctionSpec{Name: "f", Blueprint: "bp_ready"}, "functions[0].blueprint"},
		} {
			_, err := w.fn.Deploy(ctx, spec("boxes", codeHash, tc.f))
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Field != tc.field || fe.Code != fault.BadUserInput {
				t.Errorf("%s: got %v, want an error on %s", tc.name, err, tc.field)
			}
		}
		w.fn.Blueprints = readyBlueprints{}
		for _, tc := range []struct {
			name  string
			f     functions.FunctionSpec
			field string
		}{
			{"unknown blueprint", functions.FunctionSpec{Name: "f", Blueprint: "bp_nope"}, "functions[0].blueprint"},
			{"blueprint and image", functions.FunctionSpec{Name: "f", Blueprint: "bp_ready", Image: "python:3.12"}, "functions[0].image"},
		} {
			_, err := w.fn.Deploy(ctx, spec("boxes", codeHash, tc.f))
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Field != tc.field || fe.Code != fault.BadUserInput {
				t.Errorf("%s: got %v, want an error on %s", tc.name, err, tc.field)
			}
		}
		a := w.deployVersion(t, ctx, "boxes", codeHash,
			functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: []int{8000, 8001}, Public: true,
				Command: []string{"python3", "-m", "http.server", "8000"}, HTTPMethod: "GET"},
			functions.FunctionSpec{Name: "embed", Blueprint: "bp_ready"})
		web, embed := fnNamed(t, a.Edges.Functions, "web"), fnNamed(t, a.Edges.Functions, "embed")
		if !slices.Equal(web.Ports, []int{8000, 8001}) || len(web.Command) != 4 || web.HTTPMethod != "" ||
			web.ScaledownWindowSeconds != functions.DefaultBoxScaledown || !web.Public {
			t.Fatalf("stored box: ports %v command %v method %q window %d public %v", web.Ports, web.Command, web.HTTPMethod, web.ScaledownWindowSeconds, web.Public)
		}
		if embed.Image != "levers9-bp/tn:0123abcd" || embed.BlueprintID != "bp_ready" || embed.ScaledownWindowSeconds != 60 {
			t.Fatalf("a blueprint's function: image %q blueprint %q window %d", embed.Image, embed.BlueprintID, embed.ScaledownWindowSeconds)
		}
		if got := functions.Paths(a, web, "acme", "main"); !slices.Contains(got, "/box/web") || !slices.Contains(got, "/pub/acme/main/box/web") {
			t.Fatalf("a public box's paths: %v", got)
		}
		if _, err := w.fn.BoxContainer(ctx, web, 10*time.Millisecond); code(err) != fault.Unavailable {
			t.Fatalf("no ready box in time: %v", err)
		}
		svc := w.jobOf(t, web.ID).Spec.Services[0]
		want := []jobspec.Port{{Name: "p8000", Port: 8000}, {Name: "p8001", Port: 8001}}
		if !slices.Equal(svc.Ports, want) ||
			!slices.Equal(svc.Args, []string{functions.BoxPortsArg, "[8000,8001]", functions.BoxCommandArg, `["python3","-m","http.server","8000"]`}) {
			t.Fatalf("box job: ports %+v args %q", svc.Ports, svc.Args)
		}
		if _, err := w.fn.BoxContainer(ctx, embed, time.Millisecond); code(err) != fault.BadUserInput {
			t.Fatalf("a function's box container: %v", err)
		}
	})
}

// TestBoxRestart: a box's container is replaced when it crashes while
// the box is in use, not once the box stayed idle through its window (it
// scales to zero and the next request starts it), and not when it never
// started its runner.
func TestBoxRestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "boxes", codeHash,
			functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: []int{8000}, ScaledownWindowSeconds: 120})
		f := a.Edges.Functions[0]
		reconcile := func() {
			t.Helper()
			if err := w.fn.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		reconcile()
		if n := len(w.containers(t, f.ID)); n != 0 {
			t.Fatalf("an unused box has %d containers", n)
		}
		w.fn.BoxContainer(ctx, f, time.Millisecond) //nolint:errcheck // starts one
		cs := w.containers(t, f.ID)
		if len(cs) != 1 {
			t.Fatalf("%d containers started", len(cs))
		}
		w.claim(t, w.runner(t, cs[0]), 0) // ready
		if j, err := w.fn.BoxContainer(ctx, f, time.Second); err != nil || j != cs[0].JobID {
			t.Fatalf("a ready box: %s %v", j, err)
		}
		// Traffic through the relay (a long WebSocket) counts as use.
		w.clock.Advance(10 * time.Second)
		used := w.clock.Now()
		if err := w.fn.MarkUsed(context.Background(), []string{cs[0].JobID, "job_other"}, used); err != nil {
			t.Fatal(err)
		}

		// It crashes in use: a new one starts, its window from the last use.
		w.clock.Advance(30 * time.Second)
		if err := w.fn.Jobs.MarkEnded(fixture.Sys(), cs[0].JobID, job.StatusError, "exit code 1", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		reconcile()
		cs = w.containers(t, f.ID)
		if len(cs) != 2 || cs[0].State != container.StateSTOPPED || cs[1].State != container.StateSTARTING {
			t.Fatalf("after a crash: %d containers", len(cs))
		}
		if cs[1].LastTaskAt == nil || cs[1].LastTaskAt.Sub(used).Abs() > time.Millisecond {
			t.Fatalf("the restarted box's last use %v, want %v", cs[1].LastTaskAt, used)
		}
		reconcile()
		if n := len(w.containers(t, f.ID)); n != 2 {
			t.Fatalf("a live box got another container: %d", n)
		}

		// Idle through its window: the runner is told to leave, and the
		// box is not started again.
		r := w.runner(t, cs[1])
		if _, exit := w.claim(t, r, 1); exit {
			t.Fatal("a box in use was told to leave")
		}
		w.clock.Advance(91 * time.Second)
		if _, exit := w.claim(t, r, 1); !exit {
			t.Fatal("an idle box was not scaled down")
		}
		if err := w.fn.Jobs.MarkEnded(fixture.Sys(), cs[1].JobID, job.StatusComplete, "exit code 0", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		reconcile()
		if n := len(w.containers(t, f.ID)); n != 2 {
			t.Fatalf("an idle box was started again: %d containers", n)
		}

		// The next request starts it; one that dies before its runner
		// starts is not replaced by reconcile.
		w.fn.BoxContainer(ctx, f, time.Millisecond) //nolint:errcheck // starts one
		cs = w.containers(t, f.ID)
		if len(cs) != 3 {
			t.Fatalf("a request to an idle box: %d containers", len(cs))
		}
		if err := w.fn.Jobs.MarkEnded(fixture.Sys(), cs[2].JobID, job.StatusError, "no such image", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		reconcile()
		if n := len(w.containers(t, f.ID)); n != 3 {
			t.Fatalf("a box that never started was started again: %d containers", n)
		}
	})
}

// TestBoxCrashLoop: a box that crashes again and again with no request
// in between is restarted after growing pauses, at most MaxBoxRestarts
// times; a request starts it again, and its use starts the count again.
func TestBoxCrashLoop(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "boxes", codeHash,
			functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: []int{8000}, ScaledownWindowSeconds: 3600})
		f := a.Edges.Functions[0]
		reconcile := func() int {
			t.Helper()
			if err := w.fn.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			return len(w.containers(t, f.ID))
		}
		// crash readies the newest container, then ends it.
		crash := func() {
			t.Helper()
			cs := w.containers(t, f.ID)
			c := cs[len(cs)-1]
			w.claim(t, w.runner(t, c), 0)
			if err := w.fn.Jobs.MarkEnded(fixture.Sys(), c.JobID, job.StatusError, "exit code 1", w.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		w.fn.BoxContainer(ctx, f, time.Millisecond) //nolint:errcheck // starts one
		cs := w.containers(t, f.ID)
		w.claim(t, w.runner(t, cs[0]), 0)
		if _, err := w.fn.BoxContainer(ctx, f, time.Second); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Second)
		crash()
		if n := reconcile(); n != 2 {
			t.Fatalf("the first crash is not restarted at once: %d containers", n)
		}
		for k := 1; k < functions.MaxBoxRestarts; k++ {
			w.clock.Advance(time.Second)
			crash()
			if n := reconcile(); n != k+1 {
				t.Fatalf("crash %d restarted at once: %d containers", k+1, n)
			}
			w.clock.Advance(5 * time.Second << k)
			if n := reconcile(); n != k+2 {
				t.Fatalf("crash %d not restarted after its pause: %d containers", k+1, n)
			}
		}
		w.clock.Advance(time.Second)
		crash()
		w.clock.Advance(time.Hour - time.Minute)
		if n := reconcile(); n != functions.MaxBoxRestarts+1 {
			t.Fatalf("a box crashing unused kept being restarted: %d containers", n)
		}
		// A request starts it; its use counts: a crash then restarts at once.
		w.fn.BoxContainer(ctx, f, time.Millisecond) //nolint:errcheck // starts one
		cs = w.containers(t, f.ID)
		w.claim(t, w.runner(t, cs[len(cs)-1]), 0)
		if _, err := w.fn.BoxContainer(ctx, f, time.Second); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Second)
		crash()
		if n, want := reconcile(), functions.MaxBoxRestarts+3; n != want {
			t.Fatalf("a used box's crash: %d containers, want %d", n, want)
		}
	})
}

// TestBoxUseWrites: requests to a ready box write its use at most once a
// second (every HTTP request to a box looks its container up).
func TestBoxUseWrites(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "boxes", codeHash,
			functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: []int{8000}})
		f := a.Edges.Functions[0]
		w.fn.BoxContainer(ctx, f, time.Millisecond) //nolint:errcheck // starts one
		w.claim(t, w.runner(t, w.containers(t, f.ID)[0]), 0)
		lastUse := func() time.Time {
			t.Helper()
			c := w.containers(t, f.ID)[0]
			if c.LastTaskAt == nil {
				t.Fatal("no use recorded")
			}
			return *c.LastTaskAt
		}
		if _, err := w.fn.BoxContainer(ctx, f, time.Second); err != nil {
			t.Fatal(err)
		}
		first := lastUse()
		w.clock.Advance(500 * time.Millisecond)
		if _, err := w.fn.BoxContainer(ctx, f, time.Second); err != nil {
			t.Fatal(err)
		}
		if got := lastUse(); !got.Equal(first) {
			t.Fatalf("a request within a second wrote its use: %v, then %v", first, got)
		}
		w.clock.Advance(600 * time.Millisecond)
		if _, err := w.fn.BoxContainer(ctx, f, time.Second); err != nil {
			t.Fatal(err)
		}
		if got := lastUse(); got.Sub(first) < time.Second {
			t.Fatalf("a request a second later did not write its use: %v, then %v", first, got)
		}
	})
}

// TestBoxWaitSaysWhy: a request that waited in vain for a box whose
// container's job cannot start hears the scheduler's reason, not only
// "try again".
func TestBoxWaitSaysWhy(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		a := w.deployVersion(t, ctx, "waits", codeHash,
			functions.FunctionSpec{Name: "web", Kind: function.KindBOX, Ports: []int{8000}})
		f := a.Edges.Functions[0]
		w.fn.BoxContainer(ctx, f, time.Millisecond) //nolint:errcheck // starts one
		cs := w.containers(t, f.ID)
		if len(cs) != 1 || cs[0].JobID == "" {
			t.Fatalf("containers: %+v", cs)
		}
		const why = "port 8000 is in use on every node of the queue"
		if err := w.fn.DB.Ent.Job.UpdateOneID(cs[0].JobID).SetStatusReason(why).Exec(fixture.Sys()); err != nil {
			t.Fatal(err)
		}
		_, err := w.fn.BoxContainer(ctx, f, 10*time.Millisecond)
		if f := fault.Classify(err); len(f) != 1 || f[0].Code != fault.Unavailable || !strings.Contains(err.Error(), why) {
			t.Fatalf("waiting for a box whose job waits: %v; want UNAVAILABLE naming %q", err, why)
		}
	})
}

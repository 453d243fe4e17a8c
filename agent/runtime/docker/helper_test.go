package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 90 * time.Second

func randomID(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newRuntime returns a runtime on the test daemon with a node ID of its
// own, so tests running side by side never see each other's containers.
func newRuntime(t *testing.T, change ...func(*Config)) *Runtime {
	t.Helper()
	image := dockertest.Busybox(t)
	cfg := Config{NodeID: randomID("node-"), DefaultImage: image, StopGrace: 2 * time.Second}
	for _, c := range change {
		c(&cfg)
	}
	return openRuntime(t, cfg)
}

func openRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever a failed test left running goes.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cli := dockertest.Client(t)
		f := client.Filters{}.Add("label", labelNode+"="+cfg.NodeID)
		if cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
			for _, c := range cs.Items {
				_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
		if ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
			for _, n := range ns.Items {
				_, _ = cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			}
		}
		_ = r.Close()
	})
	return r
}

func sh(script string) []string { return []string{"sh", "-c", script} }

// start starts a job of the given services with a fresh ID.
func start(t *testing.T, r *Runtime, services ...runtime.ServiceSpec) runtime.Job {
	t.Helper()
	return startSpec(t, r, runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Tenant: "tenant-1", Services: services})
}

func startSpec(t *testing.T, r *Runtime, spec runtime.JobSpec) runtime.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	j, err := r.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// events collects a job's events.
type events struct {
	t        *testing.T
	job      runtime.Job
	all      []runtime.Event
	firstSeq uint64 // of the first line; 1 unless resumed
}

func watch(t *testing.T, j runtime.Job) *events { return &events{t: t, job: j, firstSeq: 1} }

// until reads events until one satisfies ok and returns it.
func (e *events) until(what string, ok func(runtime.Event) bool) runtime.Event {
	e.t.Helper()
	deadline := time.After(testTimeout)
	for {
		select {
		case ev, open := <-e.job.Events():
			if !open {
				e.t.Fatalf("events ended before %s; got:\n%s", what, e)
			}
			e.all = append(e.all, ev)
			if ok(ev) {
				return ev
			}
		case <-deadline:
			e.t.Fatalf("no %s within %s; got:\n%s", what, testTimeout, e)
		}
	}
}

// line waits for the line text from service.
func (e *events) line(service, text string) runtime.LogEvent {
	e.t.Helper()
	return e.until(fmt.Sprintf("line %q of %s", text, service), func(ev runtime.Event) bool {
		l, ok := ev.(runtime.LogEvent)
		return ok && l.Service == service && l.Text == text
	}).(runtime.LogEvent)
}

// state waits for service to reach state.
func (e *events) state(service string, state runtime.State) runtime.StateEvent {
	e.t.Helper()
	return e.until(fmt.Sprintf("%s %s", service, state), func(ev runtime.Event) bool {
		s, ok := ev.(runtime.StateEvent)
		return ok && s.Service == service && s.State == state
	}).(runtime.StateEvent)
}

// end reads the remaining events and returns the job's result, checking
// the rules every job keeps: Seq from 1 without gaps, Events closed before
// Done.
func (e *events) end() runtime.Result {
	e.t.Helper()
	deadline := time.After(testTimeout)
	for open := true; open; {
		select {
		case ev, ok := <-e.job.Events():
			if ok {
				e.all = append(e.all, ev)
			}
			open = ok
		case <-deadline:
			e.t.Fatalf("job did not end within %s; got:\n%s", testTimeout, e)
		}
	}
	select {
	case <-e.job.Done():
	case <-time.After(testTimeout):
		e.t.Fatal("Done not closed after Events")
	}
	e.checkSeq(e.firstSeq)
	return e.job.Wait()
}

// checkSeq checks that log lines are numbered from first without gaps.
func (e *events) checkSeq(first uint64) {
	e.t.Helper()
	want := first
	for _, ev := range e.all {
		if l, ok := ev.(runtime.LogEvent); ok {
			if l.Seq != want {
				e.t.Fatalf("line %q has Seq %d, want %d; events:\n%s", l.Text, l.Seq, want, e)
			}
			want++
		}
	}
}

// lines are the texts service wrote.
func (e *events) lines(service string) []string {
	var out []string
	for _, ev := range e.all {
		if l, ok := ev.(runtime.LogEvent); ok && l.Service == service {
			out = append(out, l.Text)
		}
	}
	return out
}

// final is service's last state event.
func (e *events) final(service string) runtime.StateEvent {
	e.t.Helper()
	for _, ev := range slices.Backward(e.all) {
		if s, ok := ev.(runtime.StateEvent); ok && s.Service == service {
			return s
		}
	}
	e.t.Fatalf("no state for %s:\n%s", service, e)
	return runtime.StateEvent{}
}

// states are service's states in order, progress reports left out.
func (e *events) states(service string) []runtime.State {
	var out []runtime.State
	for _, ev := range e.all {
		if s, ok := ev.(runtime.StateEvent); ok && s.Service == service && (s.Reason == "" || s.State != runtime.Starting) {
			out = append(out, s.State)
		}
	}
	return out
}

func (e *events) String() string {
	var b strings.Builder
	for _, ev := range e.all {
		switch ev := ev.(type) {
		case runtime.LogEvent:
			fmt.Fprintf(&b, "  %d %s %s: %s\n", ev.Seq, ev.Service, ev.Stream, ev.Text)
		case runtime.StateEvent:
			fmt.Fprintf(&b, "  %s %s code=%v reason=%q ports=%v\n", ev.Service, ev.State, deref(ev.ExitCode), ev.Reason, ev.Ports)
		}
	}
	return b.String()
}

// assertRemoved fails unless nothing of the job is left on the daemon.
func assertRemoved(t *testing.T, jobID string) {
	t.Helper()
	cli := dockertest.Client(t)
	ctx := context.Background()
	f := client.Filters{}.Add("label", labelJob+"="+jobID)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		t.Errorf("container %v (%s) left behind", c.Names, c.State)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		t.Errorf("network %s left behind", n.Name)
	}
}

func wantResult(t *testing.T, got runtime.Result, status runtime.Status, reason string) {
	t.Helper()
	if got.Status != status || got.Reason != reason {
		t.Errorf("result = %s %q, want %s %q", got.Status, got.Reason, status, reason)
	}
}

func wantFinal(t *testing.T, e *events, service string, state runtime.State, code int, reason string) {
	t.Helper()
	f := e.final(service)
	if f.State != state || f.Reason != reason || f.ExitCode == nil || *f.ExitCode != code {
		t.Errorf("%s ended %s code=%v reason=%q, want %s code=%d reason=%q\n%s",
			service, f.State, deref(f.ExitCode), f.Reason, state, code, reason, e)
	}
}

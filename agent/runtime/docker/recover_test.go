package docker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// closeAndWait closes r, leaving its containers running, and waits until
// j has let go of them.
func closeAndWait(t *testing.T, r *Runtime, e *events) {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	res := e.end()
	if res.Status != runtime.Error || res.Reason != "docker runtime closed; the job's containers keep running" {
		t.Errorf("result after Close: %s %q", res.Status, res.Reason)
	}
}

func recoverOne(t *testing.T, r *Runtime, jobID string) runtime.Recovered {
	t.Helper()
	recs, err := r.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID() != jobID {
		ids := make([]string, len(recs))
		for i, rec := range recs {
			ids[i] = rec.ID()
		}
		t.Fatalf("recovered %v, want [%s]", ids, jobID)
	}
	return recs[0]
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", prefix, i+1)
	}
	return out
}

// TestDockerRecoverResume: an agent dies (its runtime is closed) while a
// job runs; the next one recovers the job and resumes its log exactly after
// what the server stored.
func TestDockerRecoverResume(t *testing.T) {
	t.Parallel()
	cfg := Config{NodeID: randomID("node-"), DefaultImage: dockertest.Busybox(t), StopGrace: 2 * time.Second}
	a := openRuntime(t, cfg)
	spec := runtime.JobSpec{ID: randomID("job-"), Attempt: 3, Tenant: "t", Timeout: 10 * time.Minute, Services: []runtime.ServiceSpec{
		{Name: "counter", Command: sh(`for i in $(seq 1 80); do echo "line $i"; sleep 0.1; done`)},
		{Name: "other", Command: sh(`for i in $(seq 1 40); do echo "other $i" >&2; sleep 0.2; done`)},
		{Name: "quick", Command: sh(`echo quick`)},
	}}
	ja := startSpec(t, a, spec)
	ea := watch(t, ja)
	ea.state("quick", runtime.Running)
	ea.line("quick", "quick")

	// What the server stored: the lines seen so far.
	stored := map[string][]string{}
	cursor := runtime.LogCursor{After: map[string]time.Time{}}
	for _, ev := range ea.all {
		if l, ok := ev.(runtime.LogEvent); ok {
			stored[l.Service] = append(stored[l.Service], l.Text)
			cursor.Seq, cursor.After[l.Service] = l.Seq, l.Time
		}
	}
	before := time.Now()
	closeAndWait(t, a, ea)

	b := openRuntime(t, cfg)
	rec := recoverOne(t, b, spec.ID)
	if rec.Attempt() != 3 || !slices.Equal(rec.Services(), []string{"counter", "other", "quick"}) {
		t.Errorf("recovered attempt %d services %v", rec.Attempt(), rec.Services())
	}
	if s := rec.StartedAt(); s.IsZero() || s.After(before) || time.Since(s) > testTimeout {
		t.Errorf("StartedAt %s", s)
	}
	time.Sleep(500 * time.Millisecond) // output that nobody reads meanwhile must not be lost
	rec.Resume(cursor)
	eb := watch(t, rec)
	eb.firstSeq = cursor.Seq + 1
	res := eb.end()

	wantResult(t, res, runtime.Complete, "")
	for service, want := range map[string][]string{
		"counter": numbered("line", 80), "other": numbered("other", 40), "quick": {"quick"},
	} {
		got := append(slices.Clone(stored[service]), eb.lines(service)...)
		if !slices.Equal(got, want) {
			t.Errorf("%s: stored %q then resumed %q, want %q", service, stored[service], eb.lines(service), want)
		}
		wantFinal(t, eb, service, runtime.Exited, 0, "")
	}
	assertRemoved(t, spec.ID)
}

// TestDockerRecoveredJobStoppedBeforeResume: a job the server no longer
// wants is stopped and removed without a word.
func TestDockerRecoveredJobStoppedBeforeResume(t *testing.T) {
	t.Parallel()
	cfg := Config{NodeID: randomID("node-"), DefaultImage: dockertest.Busybox(t), StopGrace: 2 * time.Second}
	a := openRuntime(t, cfg)
	ja := start(t, a, runtime.ServiceSpec{Name: "sleeper", Command: sh("echo hi; exec sleep 60")})
	ea := watch(t, ja)
	ea.line("sleeper", "hi")
	closeAndWait(t, a, ea)

	b := openRuntime(t, cfg)
	rec := recoverOne(t, b, ja.ID())
	rec.Stop("not wanted", 0)
	rec.Stop("second reason", 0)
	rec.Resume(runtime.LogCursor{}) // too late: does nothing
	eb := watch(t, rec)
	res := eb.end()
	if len(eb.all) != 0 {
		t.Errorf("a discarded job reported:\n%s", eb)
	}
	wantResult(t, res, runtime.Error, "not wanted")
	if len(res.Services) != 1 || res.Services[0].State != runtime.Failed || res.Services[0].Reason != "stopped: not wanted" {
		t.Errorf("services %+v", res.Services)
	}
	assertRemoved(t, ja.ID())
}

// TestDockerStartRemovesEarlierAttempts: a retried attempt never runs
// beside what an earlier agent left of the job.
func TestDockerStartRemovesEarlierAttempts(t *testing.T) {
	t.Parallel()
	cfg := Config{NodeID: randomID("node-"), DefaultImage: dockertest.Busybox(t), StopGrace: 2 * time.Second}
	a := openRuntime(t, cfg)
	id := randomID("job-")
	first := startSpec(t, a, runtime.JobSpec{ID: id, Attempt: 1, Services: []runtime.ServiceSpec{
		{Name: "old", Command: sh("echo old; exec sleep 60")},
	}})
	ea := watch(t, first)
	ea.line("old", "old")
	closeAndWait(t, a, ea)

	b := openRuntime(t, cfg)
	second := startSpec(t, b, runtime.JobSpec{ID: id, Attempt: 2, Services: []runtime.ServiceSpec{
		{Name: "new", Command: sh("echo new")},
	}})
	cli := dockertest.Client(t)
	f := client.Filters{}.Add("label", labelJob+"="+id, labelAttempt+"="+strconv.Itoa(1))
	cs, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Items) != 0 {
		t.Errorf("attempt 1 still has %d containers after attempt 2 started", len(cs.Items))
	}
	eb := watch(t, second)
	wantResult(t, eb.end(), runtime.Complete, "")
	if got := eb.lines("new"); !slices.Equal(got, []string{"new"}) {
		t.Errorf("attempt 2 wrote %q", got)
	}
	assertRemoved(t, id)
}

// TestDockerRecoverWithoutAContainer: a service the old agent never
// created fails, and so the job does.
func TestDockerRecoverWithoutAContainer(t *testing.T) {
	t.Parallel()
	cfg := Config{NodeID: randomID("node-"), DefaultImage: dockertest.Busybox(t), StopGrace: 2 * time.Second}
	a := openRuntime(t, cfg)
	ja := start(t, a,
		runtime.ServiceSpec{Name: "kept", Command: sh("echo kept; exec sleep 60")},
		runtime.ServiceSpec{Name: "lost", Command: sh("exec sleep 60")},
	)
	ea := watch(t, ja)
	ea.state("lost", runtime.Running)
	closeAndWait(t, a, ea)
	cli := dockertest.Client(t)
	if _, err := cli.ContainerRemove(context.Background(), containerName(ja.ID(), 1, "lost"), client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}

	b := openRuntime(t, cfg)
	rec := recoverOne(t, b, ja.ID())
	if !slices.Equal(rec.Services(), []string{"kept", "lost"}) {
		t.Errorf("services %v", rec.Services())
	}
	rec.Resume(runtime.LogCursor{Seq: 1, After: map[string]time.Time{"kept": time.Now().Add(time.Hour)}})
	eb := watch(t, rec)
	eb.firstSeq = 2
	res := eb.end()
	reason := "not started: the agent restarted while starting the job"
	wantResult(t, res, runtime.Error, "service lost failed: "+reason)
	if f := eb.final("lost"); f.State != runtime.Failed || f.Reason != reason {
		t.Errorf("lost ended %s %q", f.State, f.Reason)
	}
	if f := eb.final("kept"); f.State != runtime.Failed || f.Reason != "stopped: service lost failed" {
		t.Errorf("kept ended %s %q", f.State, f.Reason)
	}
	if got := eb.lines("kept"); len(got) != 0 {
		t.Errorf("lines before the cursor sent again: %q", got)
	}
	assertRemoved(t, ja.ID())
}

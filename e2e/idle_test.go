package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// idleBound bounds the idle stop of a queue with a 60 s idle timeout: the
// sweep runs every minute, warns a job idle for 48 s or more, and stops it
// at a later sweep. Only catches hangs.
const idleBound = 5 * time.Minute

// Idle stop through the real server: on a queue with an idle timeout of
// 60 s, an interactive job left alone gets a warning event, then is
// cancelled with the reason "idle for …"; an interactive job used by
// levers9 exec meanwhile, and a batch job, keep running.
func TestIdleStop(t *testing.T) {
	t.Parallel()
	s, c, env := interactiveServer(t, ", idleTimeoutSeconds: 60")
	small := []string{"--queue", "inter", "--cpu", "0.25", "--memory", "64"} // all three fit the node
	idle := submitDetached(t, env, append(small, "--interactive", "--", "sleep", "600")...)
	used := submitDetached(t, env, append(small, "--interactive", "--", "sleep", "600")...)
	batch := submitDetached(t, env, append(small, "--", "sleep", "600")...)
	t.Cleanup(func() {
		for _, id := range []string{idle, used, batch} {
			clientRun(t, env, "", "cancel", id)
		}
	})
	for _, id := range []string{idle, used, batch} {
		poll(t, "the jobs running", func() bool { return jobByID(t, s.URL, c.Token, id).Status == "RUNNING" })
	}

	// The used job: an exec every few seconds, each marking it active.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if _, errOut, code := clientRun(t, env, "", "exec", used, "--", "true"); code != 0 {
				t.Errorf("exec in the used job: exit %d, %q", code, errOut)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Second):
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)

	type event struct{ Service, Status, Reason string }
	events := func(id string) []event {
		var out struct{ JobEvents []event }
		gql(t, s.URL, c.Token, `query($id: ID!) { jobEvents(jobId: $id) { service status reason } }`, map[string]any{"id": id}, &out)
		return out.JobEvents
	}
	deadline := time.Now().Add(idleBound)
	var warning string
	for warning == "" {
		for _, e := range events(idle) {
			if e.Status == "RUNNING" && strings.HasPrefix(e.Reason, "idle for ") {
				warning = e.Reason
			}
		}
		if st := jobByID(t, s.URL, c.Token, idle).Status; warning == "" && st != "RUNNING" {
			t.Fatalf("the idle job ended (%s) without a warning event first: %+v", st, events(idle))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no idle warning within %v: events %+v", idleBound, events(idle))
		}
		time.Sleep(time.Second)
	}
	if !strings.Contains(warning, "stops in") {
		t.Errorf("warning %q does not say when the job stops", warning)
	}

	var j jobRow
	for j = jobByID(t, s.URL, c.Token, idle); j.Status == "RUNNING"; j = jobByID(t, s.URL, c.Token, idle) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle job still runs %v after its start: events %+v", idleBound, events(idle))
		}
		time.Sleep(time.Second)
	}
	if j.Status != "CANCELLED" || !strings.HasPrefix(j.StatusReason, "idle for ") {
		t.Fatalf("the idle job ended as %+v; want CANCELLED, idle for …", j)
	}
	for _, id := range []string{used, batch} {
		if j := jobByID(t, s.URL, c.Token, id); j.Status != "RUNNING" {
			t.Errorf("job %s: %+v; want it still running", id, j)
		}
	}
}

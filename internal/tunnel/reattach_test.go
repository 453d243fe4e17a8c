package tunnel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

// recoverer is a runtime whose jobs outlived an earlier agent: Recover
// returns them; it starts nothing new.
type recoverer struct{ found []runtime.Recovered }

func (r *recoverer) Name() string { return wire.RuntimeDocker }
func (r *recoverer) Start(context.Context, runtime.JobSpec) (runtime.Job, error) {
	return nil, fmt.Errorf("not in this test")
}
func (r *recoverer) Recover(context.Context) ([]runtime.Recovered, error) { return r.found, nil }

// leftJob is a job found running. Resumed, it prints one line after the
// cursor and exits 0; stopped, it ends silently.
type leftJob struct {
	id      string
	attempt int
	events  chan runtime.Event
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	cursor  *runtime.LogCursor
	stopped string
}

func newLeftJob(id string, attempt int) *leftJob {
	return &leftJob{id: id, attempt: attempt, events: make(chan runtime.Event, 8), done: make(chan struct{})}
}

func (j *leftJob) ID() string                   { return j.id }
func (j *leftJob) Attempt() int                 { return j.attempt }
func (j *leftJob) Services() []string           { return []string{"main"} }
func (j *leftJob) StartedAt() time.Time         { return time.Now().Add(-time.Minute) }
func (j *leftJob) Events() <-chan runtime.Event { return j.events }
func (j *leftJob) Done() <-chan struct{}        { return j.done }
func (j *leftJob) Wait() runtime.Result {
	<-j.done
	return runtime.Result{Status: runtime.Complete}
}

func (j *leftJob) end() {
	j.once.Do(func() { close(j.events); close(j.done) })
}

func (j *leftJob) Resume(c runtime.LogCursor) {
	j.mu.Lock()
	j.cursor = &c
	j.mu.Unlock()
	code := 0
	j.events <- runtime.LogEvent{JobID: j.id, Service: "main", Stream: runtime.Stdout, Seq: c.Seq + 1, Time: time.Now(), Text: "after the restart"}
	j.events <- runtime.StateEvent{JobID: j.id, Service: "main", State: runtime.Exited, ExitCode: &code, Time: time.Now()}
	j.end()
}

func (j *leftJob) Stop(reason string, _ time.Duration) {
	j.mu.Lock()
	if j.stopped == "" {
		j.stopped = reason
	}
	j.mu.Unlock()
	j.end()
}

func (j *leftJob) state() (*runtime.LogCursor, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.cursor, j.stopped
}

// TestReattach: a restarted agent whose runtime recovers jobs lists them
// in its hello; the server's reconcile resumes the one it still wants
// from where its stored log ends, and has the agent stop a run of an
// attempt the job has left and a job it never gave.
func TestReattach(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		code, _ := w.invite(t, nil)
		dir := t.TempDir()
		inv := wire.Inventory{CPUs: 8, MemoryMiB: 16384}
		st, err := agent.Join(context.Background(), agent.JoinConfig{Server: w.http.URL, Invite: code, Name: "n1", StateDir: dir, Inventory: inv})
		if err != nil {
			t.Fatal(err)
		}
		kept := w.running(t, st.NodeID, 0)
		at := time.Now().UTC().Truncate(time.Second).Add(123456 * time.Microsecond)
		if err := (&joblog.Service{DB: w.db}).Append(w.sys, kept, 1, lines("main", 1, 3, at, "before")); err != nil {
			t.Fatal(err)
		}
		requeued := w.running(t, st.NodeID, 1)
		if err := w.db.Ent.Job.UpdateOneID(requeued).SetAttempt(2).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		left := map[string]*leftJob{
			kept:         newLeftJob(kept, 1),
			requeued:     newLeftJob(requeued, 1),
			"job_gone_1": newLeftJob("job_gone_1", 1),
		}
		rt := &recoverer{}
		for _, j := range left {
			rt.found = append(rt.found, j)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- agent.Run(ctx, agent.Config{StateDir: dir, Inventory: inv, Runtime: rt, Log: w.log.With("agent", "n1")})
		}()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent.Run: %v", err)
			}
		})

		if j := w.waitEnded(t, kept); j.Status != job.StatusComplete {
			t.Fatalf("kept job = %s %q; want COMPLETE", j.Status, j.StatusReason)
		}
		cursor, stopped := left[kept].state()
		// Stored times are whole microseconds: output within the last
		// line's microsecond is that line.
		wantAfter := at.Add(3*time.Millisecond + time.Microsecond - time.Nanosecond)
		if cursor == nil || cursor.Seq != 3 || !cursor.After["main"].Equal(wantAfter) || stopped != "" {
			t.Fatalf("kept job resumed at %+v, stopped %q; want seq 3, main after %v", cursor, stopped, wantAfter)
		}
		stored, err := w.db.Ent.LogLine.Query().Where(logline.JobID(kept)).Order(logline.BySeq()).All(w.sys)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 4 || stored[3].Seq != 4 || stored[3].Text != "after the restart" {
			t.Fatalf("stored %d lines, last %+v; want 4, the 4th after the restart", len(stored), stored[len(stored)-1])
		}
		for _, id := range []string{requeued, "job_gone_1"} {
			w.waitFor(t, "job "+id+" stopped", func() bool {
				c, s := left[id].state()
				return c == nil && s != ""
			})
		}
	})
}

// TestNewAttemptReplacesOld: when a job is requeued and placed on the node
// that still runs its earlier attempt, the agent stops the old run and
// starts the new one only after it ended; the old run's late reports
// change nothing.
func TestNewAttemptReplacesOld(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		st := w.startAgent(t, "n1")
		mark := filepath.Join(t.TempDir(), "first-pid")
		// The first run records its PID and waits; the second fails if
		// the first is still alive.
		script := `if [ -e "$1" ]; then kill -0 "$(cat "$1")" 2>/dev/null && exit 7; echo second; exit 0; fi; echo $$ > "$1"; echo first; exec sleep 600`
		j, err := w.jobs.Submit(w.admin, jobspec.Job{Name: "t", Queue: tenancy.DefaultQueue, Retries: 1,
			Services: []jobspec.Service{{Name: "main", Command: []string{"sh", "-c", script, "sh", mark}, CPU: 1, MemoryMiB: 64}}})
		if err != nil {
			t.Fatal(err)
		}
		place := func() {
			if err := w.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(st.NodeID).Exec(w.sys); err != nil {
				t.Fatal(err)
			}
			if err := w.bus.Publish(context.Background(), notify.TopicNode, st.NodeID); err != nil {
				t.Fatal(err)
			}
		}
		place()
		w.waitFor(t, "the first attempt running and its line stored", func() bool {
			j2, err := w.db.Ent.Job.Get(w.sys, j.ID)
			_, statErr := os.Stat(mark)
			n, _ := w.db.Ent.LogLine.Query().Where(logline.JobID(j.ID), logline.Attempt(1), logline.Text("first")).Count(w.sys)
			// A line the agent reports after the requeue belongs to an attempt
			// that is over and is not stored: wait for it before the sweep.
			return err == nil && j2.Status == job.StatusRunning && statErr == nil && n == 1
		})
		// The node seems lost for a moment: the job is requeued...
		l := &nodes.Liveness{DB: w.db, Jobs: w.jobs, Bus: w.bus, Log: w.log,
			Now: func() time.Time { return time.Now().Add(time.Hour) }, TTL: time.Second, Grace: time.Second,
			Heard: time.Now(), MaxGap: 2 * time.Hour}
		// The agent keeps beating: a beat between a sweep's marking the node
		// offline and its looking for lost jobs brings the node back first,
		// and the next sweep (an hour ahead) finds it silent again.
		requeued := 0
		for try := 0; requeued == 0 && try < 5; try++ {
			res, err := l.Sweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			requeued += res.Requeued
		}
		if requeued != 1 {
			t.Fatalf("sweeps requeued %d jobs; want the job requeued", requeued)
		}
		// ...and placed on the same node again, which still runs attempt 1.
		w.waitFor(t, "the node back online", func() bool {
			n, err := w.db.Ent.Node.Get(w.sys, st.NodeID)
			return err == nil && n.Status == node.StatusOnline
		})
		place()
		if j = w.waitEnded(t, j.ID); j.Status != job.StatusComplete || j.Attempt != 2 {
			t.Fatalf("job = %s %q attempt %d; want COMPLETE on attempt 2", j.Status, j.StatusReason, j.Attempt)
		}
		texts := func(attempt int) string {
			ls, err := w.db.Ent.LogLine.Query().Where(logline.JobID(j.ID), logline.Attempt(attempt)).Order(logline.BySeq()).All(w.sys)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for i, l := range ls {
				if l.Seq != int64(i+1) {
					t.Errorf("attempt %d: line %d has seq %d", attempt, i, l.Seq)
				}
				out = append(out, l.Text)
			}
			return strings.Join(out, "|")
		}
		w.waitFor(t, "the second attempt's line", func() bool { return strings.Contains(texts(2), "second") })
		if a1, a2 := texts(1), texts(2); !strings.Contains(a1, "first") || strings.Contains(a1, "second") || strings.Contains(a2, "first") {
			t.Errorf("attempt 1 lines %q, attempt 2 lines %q", a1, a2)
		}
	})
}

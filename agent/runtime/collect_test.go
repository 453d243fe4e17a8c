package runtime

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/supervise"
)

// hang is how long a test waits before calling something a hang. It
// catches deadlocks; nothing asserts speed.
const hang = 60 * time.Second

// testLogger logs to t until the test is over; the runtime may log from
// its goroutines a moment later.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.over = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	over bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.over {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func newProcess(t *testing.T) *Process {
	t.Helper()
	return newProcessWith(t, ProcessConfig{Root: t.TempDir()})
}

// newProcessWith is a supervised runtime (the test binary re-executes
// itself as the supervisor) configured by cfg.
func newProcessWith(t *testing.T, cfg ProcessConfig) *Process {
	t.Helper()
	cfg.Supervisor = supervisorArgv(t)
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	p, err := NewProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() }) // its cgroups' folder goes
	return p
}

func supervisorArgv(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, supervise.Arg}
}

// collector drains a job's events in the background.
type collector struct {
	job     Job
	mu      sync.Mutex
	events  []Event
	changed chan struct{}
	closed  chan struct{}
}

func start(t *testing.T, p *Process, spec JobSpec) *collector {
	t.Helper()
	job, err := p.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	c := &collector{job: job, changed: make(chan struct{}, 1), closed: make(chan struct{})}
	go func() {
		defer close(c.closed)
		for ev := range job.Events() {
			c.mu.Lock()
			c.events = append(c.events, ev)
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		job.Stop("test over", 0)
		<-job.Done()
	})
	return c
}

// waitFor returns the first event matching ok, failing on a hang.
func (c *collector) waitFor(t *testing.T, what string, ok func(Event) bool) Event {
	t.Helper()
	timeout := time.After(hang)
	for {
		closed := false
		select {
		case <-c.closed:
			closed = true
		default:
		}
		for _, ev := range c.all() {
			if ok(ev) {
				return ev
			}
		}
		if closed {
			t.Fatalf("job ended without %s; events:\n%s", what, dump(c.all()))
		}
		select {
		case <-c.changed:
		case <-c.closed:
		case <-timeout:
			t.Fatalf("no %s after %s; events:\n%s", what, hang, dump(c.all()))
		}
	}
}

// wait waits for the job to end and returns its result and events.
func (c *collector) wait(t *testing.T) (Result, []Event) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(hang):
		c.job.Stop("test hang", 0)
		t.Fatalf("job did not end within %s; events:\n%s", hang, dump(c.all()))
	}
	return c.job.Wait(), c.all()
}

func (c *collector) all() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

func dump(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		switch e := ev.(type) {
		case StateEvent:
			code := "-"
			if e.ExitCode != nil {
				code = strconv.Itoa(*e.ExitCode)
			}
			b.WriteString("  state " + e.Service + " " + string(e.State) + " code=" + code + " " + e.Reason + "\n")
		case LogEvent:
			text := e.Text
			if len(text) > 100 {
				text = text[:100] + "…"
			}
			b.WriteString("  log " + strconv.FormatUint(e.Seq, 10) + " " + e.Service + "/" + string(e.Stream) + " " + text + "\n")
		}
	}
	return b.String()
}

// logs returns the lines of one service and stream.
func logs(evs []Event, service string, stream Stream) []string {
	var out []string
	for _, ev := range evs {
		if l, ok := ev.(LogEvent); ok && l.Service == service && l.Stream == stream {
			out = append(out, l.Text)
		}
	}
	return out
}

// states returns the states of one service in order.
func states(evs []Event, service string) []StateEvent {
	var out []StateEvent
	for _, ev := range evs {
		if s, ok := ev.(StateEvent); ok && s.Service == service {
			out = append(out, s)
		}
	}
	return out
}

func serviceResult(t *testing.T, r Result, name string) ServiceResult {
	t.Helper()
	for _, s := range r.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no result for service %s in %+v", name, r)
	return ServiceResult{}
}

// gone waits until pid is no process or a zombie (killed, not yet reaped
// by init).
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

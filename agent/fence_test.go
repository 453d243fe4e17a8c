package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/agent/supervise"
	"github.com/levers9/levers9/internal/wire"
)

// hang is how long these tests wait before calling something a hang; no
// test asserts speed.
const hang = 60 * time.Second

// fakeServer is the server end of the tunnel, driven by the test: each
// connection is handed over after its hello; while cut, connections are
// refused, as from a node cut off from the server.
type fakeServer struct {
	t     *testing.T
	mu    sync.Mutex
	cut   bool
	conns chan *fakeConn
}

type fakeConn struct {
	t     *testing.T
	ws    *websocket.Conn
	hello wire.Hello
	msgs  chan wire.Msg // what the agent sent after its hello (reports acknowledged)
	done  chan struct{}
	once  sync.Once
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/agent" { // the stream tunnel: not served here
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	cut := s.cut
	s.mu.Unlock()
	if cut {
		http.Error(w, "unreachable", http.StatusServiceUnavailable)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(wire.MaxMessageBytes)
	ctx := r.Context()
	_, b, err := ws.Read(ctx)
	if err != nil {
		ws.CloseNow()
		return
	}
	m, err := wire.Decode(b)
	hello, ok := m.(wire.Hello)
	if err != nil || !ok {
		ws.CloseNow()
		return
	}
	c := &fakeConn{t: s.t, ws: ws, hello: hello, msgs: make(chan wire.Msg, 100_000), done: make(chan struct{})}
	go func() {
		defer c.close()
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			seq, m, err := wire.DecodeSeq(b)
			if err != nil {
				return
			}
			if seq > 0 {
				c.send(wire.Ack{Seq: seq})
			}
			c.msgs <- m
		}
	}()
	s.conns <- c
	<-c.done
}

func (c *fakeConn) send(m wire.Msg) {
	b, err := wire.Encode(m)
	if err != nil {
		c.t.Errorf("encoding %s: %v", m.Kind(), err)
		return
	}
	_ = c.ws.Write(context.Background(), websocket.MessageText, b)
}

func (c *fakeConn) close() {
	c.once.Do(func() {
		c.ws.CloseNow()
		close(c.done)
	})
}

// cutOff drops the connection and refuses the next ones.
func (s *fakeServer) cutOff(c *fakeConn) {
	s.mu.Lock()
	s.cut = true
	s.mu.Unlock()
	c.close()
}

func (s *fakeServer) reconnect(t *testing.T) *fakeConn {
	t.Helper()
	s.mu.Lock()
	s.cut = false
	s.mu.Unlock()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(hang):
		t.Fatal("the agent did not connect")
		return nil
	}
}

// progress is the count the job's service wrote to its file.
func progress(file string) int {
	b, _ := os.ReadFile(file)
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(fields[len(fields)-1])
	return n
}

// frozen reports whether process pid is frozen: its v1 freezer cgroup
// FROZEN, its v2 cgroup's cgroup.freeze 1, else stopped by a signal.
func frozen(pid int) (bool, string) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] == "/" {
			continue
		}
		if parts[1] == "freezer" {
			st, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state"))
			if err == nil {
				return strings.TrimSpace(string(st)) == "FROZEN", "freezer.state " + strings.TrimSpace(string(st))
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			st, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", parts[2], "cgroup.freeze"))
			if err == nil {
				return strings.TrimSpace(string(st)) == "1", "cgroup.freeze " + strings.TrimSpace(string(st))
			}
		}
	}
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "State:"); ok {
			v = strings.TrimSpace(v)
			return strings.HasPrefix(v, "T"), "State " + v
		}
	}
	return false, "no process"
}

// waitUntil polls cond until it holds, failing after hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, hang)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent cut off from the server freezes its jobs once the time the
// welcome named has passed without contact, and keeps what they wrote;
// back in touch, it thaws the jobs the server still wants and kills the
// others, sending their output and end. While in touch it never freezes.
func TestFenceFreezesJobsOfACutOffAgent(t *testing.T) {
	t.Parallel()
	top, err := os.MkdirTemp("", "levers9-fence-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := runtime.ProcessConfig{Root: filepath.Join(top, "jobs"), StopGrace: time.Second}
	if os.Geteuid() == 0 {
		// Supervised, in cgroups: the cgroup freezer; else SIGSTOP.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Supervisor = []string{exe, supervise.Arg}
	}
	rt, err := runtime.NewProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })

	srv := &fakeServer{t: t, conns: make(chan *fakeConn, 4)}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	if err := SaveState(dir, &State{Server: hs.URL, NodeID: "node_1", Credential: "lv9_x"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, Config{StateDir: dir, Runtime: rt, Log: slog.New(slog.NewTextHandler(tWriter{t}, nil))})
	}()
	t.Cleanup(func() {
		cancel()
		<-ran
	})

	const fenceAfter = 2 * time.Second
	welcome := wire.Welcome{HeartbeatIntervalMs: 100, FenceAfterMs: fenceAfter.Milliseconds()}
	file := filepath.Join(top, "count")
	pidFile := filepath.Join(top, "pid")
	script := fmt.Sprintf(`echo $$ > %s; i=0; while true; do i=$((i+1)); echo $i >> %s; echo $i; sleep 0.02; done`, pidFile, file)
	start := wire.Start{JobID: "job_fence", Attempt: 1, Services: []wire.ServiceStart{{Name: "count", Command: []string{"sh", "-c", script}, CPU: 0.5, MemoryMiB: 64}}}
	running := []wire.RunningService{{JobID: "job_fence", Service: "count", Attempt: 1, StartedAt: time.Now()}}

	c := srv.reconnect(t)
	c.send(welcome)
	c.send(wire.Reconcile{})
	c.send(start)
	waitUntil(t, "progress", func() bool { return progress(file) > 5 })
	// In touch for longer than the fence allows silence: no freeze.
	for deadline := time.Now().Add(2 * fenceAfter); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		before := progress(file)
		waitUntil(t, "progress while in touch", func() bool { return progress(file) > before })
	}

	// Cut off: past the fence the job freezes, and stays frozen.
	srv.cutOff(c)
	pid := 0
	var how string
	waitUntil(t, "the job's pid", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	waitUntil(t, "a freeze", func() bool {
		var ok bool
		ok, how = frozen(pid)
		return ok
	})
	t.Logf("frozen: %s", how)
	time.Sleep(300 * time.Millisecond)
	before := progress(file)
	time.Sleep(time.Second)
	if after := progress(file); after != before {
		t.Fatalf("a frozen job went on: %d, then %d", before, after)
	}

	// Back, and the server still wants the job: it is thawed.
	c = srv.reconnect(t)
	if len(c.hello.Running) != 1 || c.hello.Running[0].JobID != "job_fence" {
		t.Fatalf("hello lists %+v, want the frozen job", c.hello.Running)
	}
	c.send(welcome)
	c.send(wire.Reconcile{Running: running})
	waitUntil(t, "progress after the thaw", func() bool { return progress(file) > before })
	if ok, how := frozen(pid); ok {
		t.Fatalf("still frozen after the thaw: %s", how)
	}

	// Cut off again, frozen again; back, the server no longer wants it
	// (another attempt runs elsewhere): it is killed at once, not
	// thawed to run out a grace, and its output and end reach the server.
	srv.cutOff(c)
	waitUntil(t, "a second freeze", func() bool { ok, _ := frozen(pid); return ok })
	time.Sleep(300 * time.Millisecond)
	last := progress(file)
	c = srv.reconnect(t)
	c.send(welcome)
	c.send(wire.Stop{JobID: "job_fence", Reason: "not wanted on this node", GraceSeconds: 3600})
	c.send(wire.Reconcile{})
	var lines []string
	var end *wire.StateChange
	timeout := time.After(hang)
	for end == nil {
		select {
		case m := <-c.msgs:
			switch m := m.(type) {
			case wire.Logs:
				for _, l := range m.Lines {
					lines = append(lines, l.Text)
				}
			case wire.StateChange:
				if m.State.Done() {
					end = &m
				}
			}
		case <-timeout:
			t.Fatalf("no end of the unwanted job within %s", hang)
		}
	}
	if end.State != wire.StateFailed || !strings.Contains(end.Reason, "not wanted on this node") {
		t.Fatalf("end %+v", end)
	}
	if after := progress(file); after != last {
		t.Fatalf("the unwanted job ran on after the freeze: %d, then %d", last, after)
	}
	// What it wrote up to the freeze reaches the server with its end (the
	// file is written first: the log may be one behind).
	if n := len(lines); n == 0 || (lines[n-1] != strconv.Itoa(last) && lines[n-1] != strconv.Itoa(last-1)) {
		tail := lines
		if len(tail) > 3 {
			tail = tail[len(tail)-3:]
		}
		t.Fatalf("the server got output ending %q, want it to end with %d", tail, last)
	}
}

// tWriter logs to t.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// The fence and its last contact outlive the agent: one restarted while
// cut off is fenced from the contact its predecessor had, before any
// welcome (its containers' jobs go on across the restart).
func TestFenceKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), FenceFile)
	f := newFence(file)
	if froze, left := f.due(time.Now()); froze || left != 0 {
		t.Fatalf("a fence never welcomed is due %v in %s", froze, left)
	}
	contact := time.Now().Add(-time.Minute)
	f.welcome(10*time.Second, contact)

	again := newFence(file)
	if froze, _ := again.due(time.Now()); !froze {
		t.Fatal("a restarted agent a minute after its last contact, fenced after 10 s, does not freeze")
	}
	f.heard(time.Now())
	again = newFence(file)
	froze, left := again.due(time.Now())
	if froze || left <= 0 || left > 10*time.Second {
		t.Fatalf("restarted right after a contact: due %v in %s, want in at most 10 s", froze, left)
	}
}

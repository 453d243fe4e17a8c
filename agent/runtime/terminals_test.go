package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Both ways the process runtime starts commands: through a supervisor,
// and as the agent's own children.
func eachStarter(t *testing.T, test func(t *testing.T, p *Process)) {
	t.Run("supervised", func(t *testing.T) {
		t.Parallel()
		test(t, newProcess(t))
	})
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		p, err := NewProcess(ProcessConfig{Root: t.TempDir(), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		test(t, p)
	})
}

// screen collects a terminal stream as it comes.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
	done    chan struct{} // closed at end of file
	err     error
}

func watch(r io.Reader) *screen {
	s := &screen{changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil && err != io.EOF {
				s.err = err
			}
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the output holds want.
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(hang)
	for !strings.Contains(s.text(), want) {
		select {
		case <-s.changed:
		case <-s.done:
			if !strings.Contains(s.text(), want) {
				t.Fatalf("output ended without %q:\n%q", want, s.text())
			}
		case <-timeout:
			t.Fatalf("no %q after %s:\n%q", want, hang, s.text())
		}
	}
}

// end waits for end of file and returns the whole output.
func (s *screen) end(t *testing.T) string {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(hang):
		t.Fatalf("output did not end within %s:\n%q", hang, s.text())
	}
	if s.err != nil {
		t.Errorf("reading: %v", s.err)
	}
	return s.text()
}

func typeIn(t *testing.T, term Terminal, text string) {
	t.Helper()
	if _, err := io.WriteString(term.Stdin(), text); err != nil {
		t.Fatalf("typing %q: %v", text, err)
	}
}

func waitCode(t *testing.T, term Terminal) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	return term.Wait(ctx)
}

// Typed commands carry "" inside words, so that their echo does not hold
// what they print: `echo h""i` shows "h""i" as typed, prints hi.

func attach(t *testing.T, c *collector, service string, size Size) (Terminal, *screen) {
	t.Helper()
	term, err := c.job.(Terminals).Attach(context.Background(), service, size)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(func() { _ = term.Close() })
	return term, watch(term.Stdout())
}

func ttyShell(t *testing.T, p *Process, id string) *collector {
	t.Helper()
	c := start(t, p, JobSpec{ID: id, Services: []ServiceSpec{{Name: "sh", Command: []string{"sh", "-i"}, TTY: true}}})
	c.waitFor(t, "RUNNING", isState("sh", Running))
	return c
}

func TestTerminalAttachShell(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := ttyShell(t, p, "job_tty")
		term, scr := attach(t, c, "sh", Size{Rows: 30, Cols: 90})
		if term.Stderr() != nil {
			t.Error("an attach has a stderr")
		}
		typeIn(t, term, "echo h\"\"i\r")
		scr.waitFor(t, "hi\r\n")

		typeIn(t, term, "stty size\r")
		scr.waitFor(t, "30 90\r\n")
		if err := term.Resize(Size{Rows: 41, Cols: 101}); err != nil {
			t.Fatal(err)
		}
		typeIn(t, term, "stty size\r")
		scr.waitFor(t, "41 101\r\n")

		// Ctrl-C ends what runs in the foreground, not the shell.
		typeIn(t, term, "sh -c 'echo rea\"\"dy; exec sleep 100'\r")
		scr.waitFor(t, "ready\r\n")
		typeIn(t, term, "\x03")
		typeIn(t, term, "echo ali\"\"ve\r")
		scr.waitFor(t, "alive\r\n")
		// Signal reaches the foreground as Ctrl-C does.
		typeIn(t, term, "sh -c 'echo sle\"\"eping; exec sleep 100'\r")
		scr.waitFor(t, "sleeping\r\n")
		if err := term.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		typeIn(t, term, "echo sti\"\"ll\r")
		scr.waitFor(t, "still\r\n")

		typeIn(t, term, "exit 7\r")
		scr.end(t)
		if code, err := waitCode(t, term); err != nil || code != 7 {
			t.Errorf("Wait = %d, %v; want 7", code, err)
		}
		res, evs := c.wait(t)
		if s := serviceResult(t, res, "sh"); s.ExitCode == nil || *s.ExitCode != 7 {
			t.Errorf("sh %+v", s)
		}
		// The terminal's lines are the service's log (a prompt may come
		// first, when input was typed ahead).
		out := logs(evs, "sh", Stdout)
		hasLine := func(want string) bool {
			for _, l := range out {
				if l == want || strings.HasSuffix(l, " "+want) {
					return true
				}
			}
			return false
		}
		if !hasLine("hi") || !hasLine("41 101") || !hasLine("alive") {
			t.Errorf("log %q lacks the terminal's output lines", out)
		}
		typed := false
		for _, l := range out {
			typed = typed || strings.HasSuffix(l, `echo h""i`)
		}
		if !typed {
			t.Errorf("log %q lacks the typed line", out)
		}
	})
}

func TestTerminalAttachReplayAndSeveral(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := start(t, p, JobSpec{ID: "job_replay", Services: []ServiceSpec{
			{Name: "sh", Command: []string{"sh", "-c", "echo early-bird; exec sh -i"}, TTY: true},
		}})
		c.waitFor(t, "RUNNING", isState("sh", Running))
		lineAfter(t, c, "sh", "early-bird")

		// What came before the attach comes first.
		a, sa := attach(t, c, "sh", Size{})
		sa.waitFor(t, "early-bird\r\n")
		b, sb := attach(t, c, "sh", Size{})
		sb.waitFor(t, "early-bird\r\n")

		// Both see what either types, and its output.
		typeIn(t, a, "echo tw\"\"o\r")
		sa.waitFor(t, "two\r\n")
		sb.waitFor(t, "two\r\n")
		typeIn(t, b, "echo thr\"\"ee\r")
		sa.waitFor(t, "three\r\n")
		sb.waitFor(t, "three\r\n")

		// A detach leaves the service and the other attach running.
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		sa.end(t)
		if _, err := waitCode(t, a); !errors.Is(err, ErrDetached) {
			t.Errorf("Wait after Close: %v, want ErrDetached", err)
		}
		_ = a.Close() // again: no harm
		typeIn(t, b, "echo fo\"\"ur\r")
		sb.waitFor(t, "four\r\n")
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.job.Done():
			t.Fatal("the job ended when its terminals detached")
		default:
		}

		// Attaching again works, and replays the latest output.
		d, sd := attach(t, c, "sh", Size{})
		sd.waitFor(t, "four\r\n")
		typeIn(t, d, "echo ag\"\"ain\r")
		sd.waitFor(t, "again\r\n")
		typeIn(t, d, "exit\r")
		sd.end(t)
		if code, err := waitCode(t, d); err != nil || code != 0 {
			t.Errorf("Wait = %d, %v; want 0", code, err)
		}
	})
}

func TestTerminalStopEndsTTYService(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := ttyShell(t, p, "job_tty_stop")
		term, scr := attach(t, c, "sh", Size{})
		typeIn(t, term, "echo $$\r")
		typeIn(t, term, "echo rea\"\"dy\r")
		scr.waitFor(t, "ready\r\n")
		// An interactive shell ignores SIGTERM: the grace's SIGKILL ends it.
		c.job.Stop("cancelled", 100*time.Millisecond)
		scr.end(t)
		code, err := waitCode(t, term)
		if err != nil || code != 128+int(syscall.SIGKILL) {
			t.Errorf("Wait = %d, %v; want %d", code, err, 128+int(syscall.SIGKILL))
		}
		res, _ := c.wait(t)
		if s := serviceResult(t, res, "sh"); s.Reason != "stopped: cancelled" {
			t.Errorf("sh %+v", s)
		}
		if _, err := c.job.(Terminals).Attach(context.Background(), "sh", Size{}); !errors.Is(err, ErrNoService) {
			t.Errorf("attach after the end: %v, want ErrNoService", err)
		}
	})
}

func TestTerminalAttachSlowIsDetached(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	// More output than an attach may fall behind, while nobody reads, in
	// 256 KiB chunks the fast attach asks for one at a time: it is never
	// more than a chunk behind however slowly the machine runs it.
	c := start(t, p, JobSpec{ID: "job_slow", Services: []ServiceSpec{
		{Name: "sh", Command: []string{"sh", "-c", "for i in 1 2 3 4 5 6; do read x; head -c 262144 /dev/zero | tr '\\0' x; echo; echo chu\"\"nk$i; done; echo do\"\"ne; exec sleep 100"}, TTY: true},
	}})
	c.waitFor(t, "RUNNING", isState("sh", Running))
	slow, err := c.job.(Terminals).Attach(context.Background(), "sh", Size{})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, scr := attach(t, c, "sh", Size{})
	for i := 1; i <= 6; i++ {
		typeIn(t, fast, "go\r")
		scr.waitFor(t, fmt.Sprintf("chunk%d", i))
	}
	scr.waitFor(t, "done")
	lineAfter(t, c, "sh", "done")
	// The slow one is detached: its output ends, and Wait says why.
	if _, err := io.ReadAll(slow.Stdout()); err != nil {
		t.Fatal(err)
	}
	if _, err := waitCode(t, slow); !errors.Is(err, errTooSlow) {
		t.Errorf("Wait = %v, want errTooSlow", err)
	}
}

// execIn starts req in service of c's job.
func execIn(t *testing.T, c *collector, service string, req ExecRequest) Terminal {
	t.Helper()
	term, err := c.job.(Terminals).Exec(context.Background(), service, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Command, err)
	}
	t.Cleanup(func() { _ = term.Close() })
	return term
}

func sleeper(t *testing.T, p *Process, id string) *collector {
	t.Helper()
	c := start(t, p, JobSpec{ID: id, Services: []ServiceSpec{
		{Name: "web", Command: []string{"sleep", "100"}, Ports: []Port{{Name: "http"}}},
	}})
	c.waitFor(t, "RUNNING", isState("web", Running))
	return c
}

func TestExecPipes(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := sleeper(t, p, "job_exec")
		term := execIn(t, c, "web", ExecRequest{Command: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
		out, errs := watch(term.Stdout()), watch(term.Stderr())
		if got := out.end(t); got != "out\n" {
			t.Errorf("stdout %q", got)
		}
		if got := errs.end(t); got != "err\n" {
			t.Errorf("stderr %q", got)
		}
		if code, err := waitCode(t, term); err != nil || code != 3 {
			t.Errorf("Wait = %d, %v; want 3", code, err)
		}

		// Input, and its end.
		cat := execIn(t, c, "web", ExecRequest{Command: []string{"cat"}})
		scr := watch(cat.Stdout())
		typeIn(t, cat, "hello\n")
		scr.waitFor(t, "hello\n")
		if err := cat.Stdin().Close(); err != nil {
			t.Fatal(err)
		}
		if got := scr.end(t); got != "hello\n" {
			t.Errorf("cat printed %q", got)
		}
		if code, err := waitCode(t, cat); err != nil || code != 0 {
			t.Errorf("cat: Wait = %d, %v; want 0", code, err)
		}
		// Nothing of it went to the job's log.
		if got := logs(c.all(), "web", Stdout); len(got) != 0 {
			t.Errorf("exec output in the log: %q", got)
		}
	})
}

func TestExecServiceEnvironment(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := sleeper(t, p, "job_exec_env")
		port := c.waitFor(t, "RUNNING", isState("web", Running)).(StateEvent).Ports[0].Port
		term := execIn(t, c, "web", ExecRequest{Command: []string{"sh", "-c", `echo "$LEVERS9_WEB_PORT_HTTP $LEVERS9_JOB_ID"; pwd`}})
		errs := watch(term.Stderr())
		got := watch(term.Stdout()).end(t)
		want := strconv.Itoa(port) + " job_exec_env\n" + filepath.Join(p.cfg.Root, "job_exec_env", "web") + "\n"
		if got != want {
			t.Errorf("printed %q, want %q (stderr %q)", got, want, errs.end(t))
		}
	})
}

func TestExecTTY(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := sleeper(t, p, "job_exec_tty")
		term := execIn(t, c, "web", ExecRequest{Command: []string{"sh", "-c", "tty; stty size"}, TTY: true, Size: Size{Rows: 33, Cols: 77}})
		if term.Stderr() != nil {
			t.Error("a terminal has a stderr")
		}
		got := watch(term.Stdout()).end(t)
		if !strings.HasPrefix(got, "/dev/pts/") || !strings.HasSuffix(got, "\r\n33 77\r\n") {
			t.Errorf("printed %q", got)
		}
		if code, err := waitCode(t, term); err != nil || code != 0 {
			t.Errorf("Wait = %d, %v; want 0", code, err)
		}

		// A shell on it: typed input, Ctrl-D.
		sh := execIn(t, c, "web", ExecRequest{Command: []string{"sh", "-i"}, TTY: true})
		scr := watch(sh.Stdout())
		typeIn(t, sh, "echo h\"\"i\r")
		scr.waitFor(t, "hi\r\n")
		typeIn(t, sh, "\x04")
		scr.end(t)
		if code, err := waitCode(t, sh); err != nil || code != 0 {
			t.Errorf("Wait = %d, %v; want 0", code, err)
		}
	})
}

func TestExecEnds(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := sleeper(t, p, "job_exec_end")
		pidOf := func(term Terminal) (int, *screen) {
			scr := watch(term.Stdout())
			scr.waitFor(t, "\n")
			pid, err := strconv.Atoi(strings.TrimSpace(scr.text()))
			if err != nil {
				t.Fatalf("pid line %q", scr.text())
			}
			return pid, scr
		}
		cmd := []string{"sh", "-c", "sleep 100 & echo $!; wait"}

		// Signal reaches its process group.
		signalled := execIn(t, c, "web", ExecRequest{Command: cmd})
		child, _ := pidOf(signalled)
		if err := signalled.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code, err := waitCode(t, signalled); err != nil || code != 128+int(syscall.SIGTERM) {
			t.Errorf("after SIGTERM: Wait = %d, %v", code, err)
		}
		gone(t, child)

		// Close kills it with its group.
		closed := execIn(t, c, "web", ExecRequest{Command: cmd})
		child, scr := pidOf(closed)
		if err := closed.Close(); err != nil {
			t.Fatal(err)
		}
		scr.end(t)
		if code, err := waitCode(t, closed); err != nil || code != 128+int(syscall.SIGKILL) {
			t.Errorf("after Close: Wait = %d, %v", code, err)
		}
		gone(t, child)

		// Exec'd processes end with the job.
		left := execIn(t, c, "web", ExecRequest{Command: cmd})
		child, _ = pidOf(left)
		leftTTY := execIn(t, c, "web", ExecRequest{Command: []string{"sleep", "100"}, TTY: true})
		c.job.Stop("cancelled", time.Minute)
		c.wait(t)
		gone(t, child)
		for _, term := range []Terminal{left, leftTTY} {
			if code, err := waitCode(t, term); err != nil || code != 128+int(syscall.SIGKILL) {
				t.Errorf("after the job's end: Wait = %d, %v", code, err)
			}
		}
	})
}

func TestExecAndAttachRefusals(t *testing.T) {
	t.Parallel()
	eachStarter(t, func(t *testing.T, p *Process) {
		c := start(t, p, JobSpec{ID: "job_refuse", Services: []ServiceSpec{
			{Name: "web", Command: []string{"sleep", "100"}},
			{Name: "quick", Command: []string{"true"}},
		}})
		c.waitFor(t, "RUNNING", isState("web", Running))
		c.waitFor(t, "quick's end", isState("quick", Exited))
		terms := c.job.(Terminals)
		ctx := context.Background()

		_, err := terms.Exec(ctx, "web", ExecRequest{Command: []string{"levers9-no-such-command"}})
		if err == nil || errors.Is(err, ErrNoService) || !strings.Contains(err.Error(), "levers9-no-such-command") {
			t.Errorf("unknown command: %v", err)
		}
		if _, err := terms.Exec(ctx, "web", ExecRequest{}); err == nil {
			t.Error("an exec without a command")
		}
		for _, name := range []string{"quick", "nope"} {
			if _, err := terms.Exec(ctx, name, ExecRequest{Command: []string{"true"}}); !errors.Is(err, ErrNoService) {
				t.Errorf("exec in %s: %v, want ErrNoService", name, err)
			}
			if _, err := terms.Attach(ctx, name, Size{}); !errors.Is(err, ErrNoService) {
				t.Errorf("attach to %s: %v, want ErrNoService", name, err)
			}
		}
		if _, err := terms.Attach(ctx, "web", Size{}); !errors.Is(err, ErrNoTTY) {
			t.Errorf("attach without tty: %v, want ErrNoTTY", err)
		}
	})
}

// Exec'd commands run as the job's uid, in the service's cgroups; the
// terminals belong to the job's uid, as a login's do.
func TestExecAsTheJobUser(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(7, 1)
	p := newProcessWith(t, ProcessConfig{Root: reachableRoot(t), UIDs: r})
	const who = `echo "uid=$(id -u) gid=$(id -g) tty=$(stat -c %u $(tty) 2>/dev/null)"; echo "cg=$(sort /proc/self/cgroup | tr '\n' ' ')"`
	c := start(t, p, JobSpec{ID: "job_exec_uid", Services: []ServiceSpec{
		{Name: "sh", Command: []string{"sh", "-c", who + "; exec sh -i"}, TTY: true, MemoryMiB: 256},
	}})
	c.waitFor(t, "RUNNING", isState("sh", Running))
	id := strconv.FormatUint(uint64(r.First), 10)
	user := "uid=" + id + " gid=" + id + " tty="
	if got := lineAfter(t, c, "sh", "uid="); "uid="+got != user+id {
		t.Fatalf("the service runs as uid=%s", got)
	}
	cgroup := lineAfter(t, c, "sh", "cg=")
	if own, _ := os.ReadFile("/proc/self/cgroup"); p.cgroups.enforces("memory") && strings.Contains(cgroup, strings.TrimSpace(string(own))) {
		t.Fatalf("the service is in the agent's cgroup: %q", cgroup)
	}
	for _, tty := range []bool{false, true} {
		term := execIn(t, c, "sh", ExecRequest{Command: []string{"sh", "-c", who}, TTY: tty})
		out := strings.ReplaceAll(watch(term.Stdout()).end(t), "\r", "")
		want := user + "\ncg=" + cgroup + "\n"
		if tty {
			want = user + id + "\ncg=" + cgroup + "\n"
		}
		if out != want {
			t.Errorf("exec (tty %v) printed %q, want %q", tty, out, want)
		}
	}
}

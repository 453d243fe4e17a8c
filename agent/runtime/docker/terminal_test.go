package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// screenReader collects a Terminal's output as it comes.
type screenReader struct {
	t    *testing.T
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // signalled on every read
	done chan struct{} // the output ended
	err  error
}

func readAll(t *testing.T, r io.Reader) *screenReader {
	s := &screenReader{t: t, more: make(chan struct{}, 1), done: make(chan struct{})}
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
			case s.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *screenReader) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the output holds want after the first `from` bytes
// and returns the length of the output up to its end.
func (s *screenReader) waitFor(from int, want string) int {
	s.t.Helper()
	deadline := time.After(testTimeout)
	for {
		out := s.String()
		if i := strings.Index(out[min(from, len(out)):], want); i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-s.more:
		case <-s.done:
			if out := s.String(); !strings.Contains(out[min(from, len(out)):], want) {
				s.t.Fatalf("output ended without %q; got %q", want, out)
			}
		case <-deadline:
			s.t.Fatalf("no %q within %s; got %q", want, testTimeout, s.String())
		}
	}
}

// end waits for the end of the output.
func (s *screenReader) end() string {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(testTimeout):
		s.t.Fatalf("output did not end; got %q", s.String())
	}
	if s.err != nil {
		s.t.Errorf("output ended with %v", s.err)
	}
	return s.String()
}

func typeIn(t *testing.T, term runtime.Terminal, text string) {
	t.Helper()
	if _, err := term.Stdin().Write([]byte(text)); err != nil {
		t.Fatalf("typing %q: %v", text, err)
	}
}

func waitTerm(t *testing.T, term runtime.Terminal) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return term.Wait(ctx)
}

func attach(t *testing.T, j runtime.Job, service string, size runtime.Size) runtime.Terminal {
	t.Helper()
	term, err := j.(runtime.Terminals).Attach(context.Background(), service, size)
	if err != nil {
		t.Fatalf("attach to %s: %v", service, err)
	}
	return term
}

// startShell starts a job whose service "shell" is sh on a terminal, and
// waits until it printed "before-attach" (to its log).
func startShell(t *testing.T, r *Runtime) (runtime.Job, *events) {
	t.Helper()
	j := start(t, r, runtime.ServiceSpec{Name: "shell", TTY: true, Command: sh(`echo before-attach; exec sh`)})
	e := watch(t, j)
	e.line("shell", "before-attach")
	return j, e
}

// TestTerminalAttach: typing into a service's terminal, its size, Ctrl-C,
// the replay of what it printed before, and its exit code; its output is
// its log too.
func TestTerminalAttach(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j, e := startShell(t, r)
	term := attach(t, j, "shell", runtime.Size{Rows: 30, Cols: 100})
	defer term.Close()
	if term.Stderr() != nil {
		t.Error("a terminal has a separate stderr")
	}
	out := readAll(t, term.Stdout())
	at := out.waitFor(0, "before-attach\r\n") // the replay

	// Arithmetic tells the command's output from the terminal's echo.
	typeIn(t, term, "echo sum-$((6*7))\r")
	at = out.waitFor(at, "sum-42\r\n")
	typeIn(t, term, "stty size\r")
	at = out.waitFor(at, "30 100\r\n")
	if err := term.Resize(runtime.Size{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	typeIn(t, term, "stty size\r")
	at = out.waitFor(at, "40 120\r\n")

	// Without Ctrl-C the next command would wait for the sleep, beyond
	// the test's timeout. The mark comes from the foreground command
	// itself, so the terminal is its own when Ctrl-C is typed.
	typeIn(t, term, "sh -c 'echo mark-$((2+3)); exec sleep 300'\r")
	at = out.waitFor(at, "mark-5\r\n")
	typeIn(t, term, "\x03")
	typeIn(t, term, "echo after-$((1+1))\r")
	_ = out.waitFor(at, "after-2\r\n")

	typeIn(t, term, "exit 5\r")
	out.end()
	if code, err := waitTerm(t, term); code != 5 || err != nil {
		t.Errorf("Wait = %d, %v; want 5", code, err)
	}
	res := e.end()
	wantResult(t, res, runtime.Error, "service shell failed: exit status 5")
	lines := e.lines("shell")
	for _, want := range []string{"before-attach", "sum-42", "40 120", "after-2"} {
		if !slices.Contains(lines, want) {
			t.Errorf("log lacks the line %q: %q", want, lines)
		}
	}
	for _, l := range lines {
		// The terminal's CRLF ends lines; a CR inside is the shell's
		// line editing.
		if strings.HasSuffix(l, "\r") {
			t.Errorf("log line %q ends with a CR", l)
		}
	}
	assertRemoved(t, j.ID())
}

// TestTerminalDetach: two attaches see the same terminal; a detach leaves
// the service running and a later attach replays what came before.
func TestTerminalDetach(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j, e := startShell(t, r)
	first := attach(t, j, "shell", runtime.Size{})
	second := attach(t, j, "shell", runtime.Size{})
	out1, out2 := readAll(t, first.Stdout()), readAll(t, second.Stdout())
	typeIn(t, first, "echo first-$((1+1))\r")
	out1.waitFor(0, "first-2\r\n")
	out2.waitFor(0, "first-2\r\n")
	typeIn(t, second, "echo second-$((1+2))\r")
	out1.waitFor(0, "second-3\r\n")

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	out1.end()
	if _, err := waitTerm(t, first); !errors.Is(err, runtime.ErrDetached) {
		t.Errorf("Wait after Close = %v, want ErrDetached", err)
	}
	if _, err := first.Stdin().Write([]byte("echo x\r")); err == nil {
		t.Error("typing into a detached terminal succeeded")
	}
	typeIn(t, second, "echo still-$((2+2))\r")
	out2.waitFor(0, "still-4\r\n")
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}

	again := attach(t, j, "shell", runtime.Size{})
	out3 := readAll(t, again.Stdout())
	at := out3.waitFor(0, "still-4\r\n") // replayed
	typeIn(t, again, "exit 3\r")
	out3.end()
	if code, err := waitTerm(t, again); code != 3 || err != nil {
		t.Errorf("Wait = %d, %v; want 3", code, err)
	}
	if strings.Contains(out3.String()[at:], "still-4") {
		t.Errorf("replayed twice: %q", out3.String())
	}
	e.end()
	assertRemoved(t, j.ID())
}

// TestTerminalAttachAfterRecover: a restarted agent attaches to a terminal
// the old one started; the replay comes from the log.
func TestTerminalAttachAfterRecover(t *testing.T) {
	t.Parallel()
	cfg := Config{NodeID: randomID("node-"), DefaultImage: dockertest.Busybox(t), StopGrace: 2 * time.Second}
	a := openRuntime(t, cfg)
	ja, ea := startShell(t, a)
	closeAndWait(t, a, ea)

	b := openRuntime(t, cfg)
	rec := recoverOne(t, b, ja.ID())
	rec.Resume(runtime.LogCursor{})
	eb := watch(t, rec)
	term := attach(t, rec, "shell", runtime.Size{})
	out := readAll(t, term.Stdout())
	out.waitFor(0, "before-attach\r\n")
	typeIn(t, term, "echo back-$((3+3)); exit 0\r")
	out.waitFor(0, "back-6\r\n")
	out.end()
	if code, err := waitTerm(t, term); code != 0 || err != nil {
		t.Errorf("Wait = %d, %v; want 0", code, err)
	}
	wantResult(t, eb.end(), runtime.Complete, "")
	if lines := eb.lines("shell"); !strings.Contains(strings.Join(lines, "\n"), "back-6") {
		t.Errorf("resumed log %q lacks back-6", lines)
	}
}

// TestTerminalRefusals: a service that does not run, or has no terminal.
func TestTerminalRefusals(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r,
		runtime.ServiceSpec{Name: "plain", Command: []string{"sleep", "300"}},
		runtime.ServiceSpec{Name: "done", Command: []string{"true"}},
	)
	e := watch(t, j)
	e.state("plain", runtime.Running)
	e.state("done", runtime.Exited)
	terms := j.(runtime.Terminals)
	ctx := context.Background()
	if _, err := terms.Attach(ctx, "plain", runtime.Size{}); !errors.Is(err, runtime.ErrNoTTY) {
		t.Errorf("attach to a service without TTY: %v, want ErrNoTTY", err)
	}
	for _, name := range []string{"absent", "done"} {
		if _, err := terms.Attach(ctx, name, runtime.Size{}); !errors.Is(err, runtime.ErrNoService) {
			t.Errorf("attach to %s: %v, want ErrNoService", name, err)
		}
		if _, err := terms.Exec(ctx, name, runtime.ExecRequest{Command: []string{"true"}}); !errors.Is(err, runtime.ErrNoService) {
			t.Errorf("exec in %s: %v, want ErrNoService", name, err)
		}
	}
	if _, err := terms.Exec(ctx, "plain", runtime.ExecRequest{}); err == nil {
		t.Error("exec of no command succeeded")
	}
	_, err := terms.Exec(ctx, "plain", runtime.ExecRequest{Command: []string{"no-such-command"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-command") {
		t.Errorf("exec of a missing command: %v", err)
	}
	t.Logf("missing command: %v", err)
	j.Stop("test over", 0)
	e.end()
}

// execIn runs req in service and returns its Terminal.
func execIn(t *testing.T, j runtime.Job, service string, req runtime.ExecRequest) runtime.Terminal {
	t.Helper()
	term, err := j.(runtime.Terminals).Exec(context.Background(), service, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Command, err)
	}
	t.Cleanup(func() { _ = term.Close() })
	return term
}

// TestExec: commands next to a running service, with and without a
// terminal; their output stays out of the job's log.
func TestExec(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r, runtime.ServiceSpec{Name: "app", Command: []string{"sleep", "300"},
		Env: []runtime.EnvVar{{Name: "FOO", Value: "bar"}}})
	e := watch(t, j)
	e.state("app", runtime.Running)

	t.Run("pipes", func(t *testing.T) {
		term := execIn(t, j, "app", runtime.ExecRequest{Command: sh(`echo out-$FOO-$LEVERS9_SERVICE; echo err >&2; exit 4`)})
		stdout, stderr := readAll(t, term.Stdout()), readAll(t, term.Stderr())
		if got, want := stdout.end(), "out-bar-app\n"; got != want {
			t.Errorf("stdout %q, want %q", got, want)
		}
		if got, want := stderr.end(), "err\n"; got != want {
			t.Errorf("stderr %q, want %q", got, want)
		}
		if code, err := waitTerm(t, term); code != 4 || err != nil {
			t.Errorf("Wait = %d, %v; want 4", code, err)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		term := execIn(t, j, "app", runtime.ExecRequest{Command: []string{"cat"}})
		out := readAll(t, term.Stdout())
		typeIn(t, term, "one\n")
		out.waitFor(0, "one\n")
		typeIn(t, term, "two")
		if err := term.Stdin().Close(); err != nil {
			t.Fatal(err)
		}
		if got := out.end(); got != "one\ntwo" {
			t.Errorf("cat wrote %q", got)
		}
		if code, err := waitTerm(t, term); code != 0 || err != nil {
			t.Errorf("Wait = %d, %v; want 0", code, err)
		}
	})
	t.Run("tty", func(t *testing.T) {
		// Daemons before API 1.42 size the terminal only after the start:
		// stty runs once the test has typed something.
		term := execIn(t, j, "app", runtime.ExecRequest{Command: sh("tty; read x; stty size; read x; stty size; read x; echo got-$x"),
			TTY: true, Size: runtime.Size{Rows: 20, Cols: 70}})
		if term.Stderr() != nil {
			t.Error("a terminal has a separate stderr")
		}
		out := readAll(t, term.Stdout())
		at := out.waitFor(0, "/dev/pts/")
		typeIn(t, term, "\r")
		at = out.waitFor(at, "20 70\r\n")
		if err := term.Resize(runtime.Size{Rows: 25, Cols: 90}); err != nil {
			t.Fatal(err)
		}
		typeIn(t, term, "\r")
		at = out.waitFor(at, "25 90\r\n")
		typeIn(t, term, "it\r")
		out.waitFor(at, "got-it\r\n")
		out.end()
		if code, err := waitTerm(t, term); code != 0 || err != nil {
			t.Errorf("Wait = %d, %v; want 0", code, err)
		}
	})
	t.Run("signal", func(t *testing.T) {
		term := execIn(t, j, "app", runtime.ExecRequest{Command: sh(`trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.1; done`)})
		out := readAll(t, term.Stdout())
		_ = readAll(t, term.Stderr())
		out.waitFor(0, "ready\n")
		if err := term.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		out.waitFor(0, "got-term\n")
		out.end()
		if code, err := waitTerm(t, term); code != 9 || err != nil {
			t.Errorf("Wait = %d, %v; want 9", code, err)
		}
	})
	t.Run("close kills", func(t *testing.T) {
		// sh waits for its child: both must go.
		term := execIn(t, j, "app", runtime.ExecRequest{Command: sh(`echo ready; sleep 271; echo not-killed`)})
		out := readAll(t, term.Stdout())
		_ = readAll(t, term.Stderr())
		out.waitFor(0, "ready\n")
		if err := term.Close(); err != nil {
			t.Fatal(err)
		}
		if got := out.end(); got != "ready\n" {
			t.Errorf("output %q", got)
		}
		if code, err := waitTerm(t, term); code != 137 || err != nil {
			t.Errorf("Wait after Close = %d, %v; want 137", code, err)
		}
		ps := execIn(t, j, "app", runtime.ExecRequest{Command: []string{"ps"}})
		procs := readAll(t, ps.Stdout()).end()
		if strings.Contains(procs, "sleep 271") || !strings.Contains(procs, "sleep 300") {
			t.Errorf("processes after Close:\n%s", procs)
		}
	})
	t.Run("close kills on a terminal", func(t *testing.T) {
		term := execIn(t, j, "app", runtime.ExecRequest{Command: sh(`echo ready; sleep 272; echo not-killed`), TTY: true})
		out := readAll(t, term.Stdout())
		out.waitFor(0, "ready\r\n")
		if err := term.Close(); err != nil {
			t.Fatal(err)
		}
		if got := out.end(); got != "ready\r\n" {
			t.Errorf("output %q", got)
		}
		if code, err := waitTerm(t, term); code != 137 || err != nil {
			t.Errorf("Wait after Close = %d, %v; want 137", code, err)
		}
		ps := execIn(t, j, "app", runtime.ExecRequest{Command: []string{"ps"}})
		if procs := readAll(t, ps.Stdout()).end(); strings.Contains(procs, "sleep 272") {
			t.Errorf("processes after Close:\n%s", procs)
		}
	})

	j.Stop("test over", 0)
	e.end()
	for _, l := range e.lines("app") {
		t.Errorf("exec output in the log: %q", l)
	}
}

// TestTerminalAttachSignal: a signal through an attach reaches the
// service's process (past the container's init).
func TestTerminalAttachSignal(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r, runtime.ServiceSpec{Name: "shell", TTY: true,
		Command: sh(`trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.1; done`)})
	e := watch(t, j)
	e.line("shell", "ready")
	term := attach(t, j, "shell", runtime.Size{})
	out := readAll(t, term.Stdout())
	if err := term.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out.waitFor(0, "got-term\r\n")
	out.end()
	if code, err := waitTerm(t, term); code != 7 || err != nil {
		t.Errorf("Wait = %d, %v; want 7", code, err)
	}
	e.end()
	wantFinal(t, e, "shell", runtime.Failed, 7, "exit status 7")
}

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/levers9/levers9/internal/dbtest"
)

// interactiveServer starts a server whose built-in node runs the process
// runtime, with tokens granted and a queue "inter" taking interactive and
// batch jobs on the built-in node (with opts, e.g. ", idleTimeoutSeconds:
// 60"). It returns the server, the admin's credentials and the CLI's
// environment as the admin.
func interactiveServer(t *testing.T, opts string) (*server, credentials, []string) {
	t.Helper()
	return interactiveServerOn(t, "process", opts)
}

// interactiveServerOn is interactiveServer with the built-in node on
// runtime (process or docker: then command-only jobs run in busybox).
func interactiveServerOn(t *testing.T, runtime, opts string) (*server, credentials, []string) {
	t.Helper()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t), "LEVERS9_LOCAL_NODE_RUNTIME="+runtime)
	c := s.credentials()
	grant(t, s.URL, c.Token)
	waitLocalNode(t, s.URL, c.Token)
	local := nodeByName(t, s.URL, c.Token, "local")
	gql(t, s.URL, c.Token, `mutation($n: ID!) { createQueue(input: {name: "inter", mode: BOTH, nodeIDs: [$n]`+opts+`}) { id } }`,
		map[string]any{"n": local.ID}, new(map[string]any))
	return s, c, cliEnv(t, s, c.Token)
}

// cliEnv is the CLI's environment for token on s, with no config file.
func cliEnv(t *testing.T, s *server, token string) []string {
	return []string{"LEVERS9_SERVER=" + s.URL, "LEVERS9_TOKEN=" + token, "LEVERS9_CONFIG=" + t.TempDir() + "/none"}
}

// submitDetached runs levers9 submit args and returns the job's ID.
func submitDetached(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, code := clientRun(t, env, "", append([]string{"submit"}, args...)...)
	m := jobIDLine.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("levers9 submit %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
	}
	return m[1]
}

// ptyProc is the binary running on a pseudo-terminal, as in a user's
// terminal window: its output is kept and matched as it arrives.
type ptyProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	ptmx   *os.File
	mu     sync.Mutex
	out    []byte
	seen   int           // out[:seen] was matched already
	more   chan struct{} // a signal per read (buffered 1)
	exited chan struct{}
	code   int // set before exited is closed
}

func startPTY(t *testing.T, env []string, args ...string) *ptyProc {
	t.Helper()
	p := &ptyProc{t: t, cmd: exec.Command(binary, args...), more: make(chan struct{}, 1), exited: make(chan struct{})}
	p.cmd.Env = append(cleanEnv(), env...)
	ptmx, err := pty.StartWithSize(p.cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	p.ptmx = ptmx
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			p.mu.Lock()
			p.out = append(p.out, buf[:n]...)
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
			if err != nil { // EIO once the process and its children closed the terminal
				return
			}
		}
	}()
	go func() {
		err := p.cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			p.code = exit.ExitCode()
		default:
			p.code = -1
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		_ = ptmx.Close()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("levers9 %v on a terminal printed:\n%q", args, p.out)
			p.mu.Unlock()
		}
	})
	return p
}

// type_ writes s as typed keys.
func (p *ptyProc) type_(s string) {
	p.t.Helper()
	if _, err := p.ptmx.WriteString(s); err != nil {
		p.t.Fatalf("typing %q: %v", s, err)
	}
}

// within waits up to d for output after what was matched so far to match
// re; it then moves past the match and returns the submatches.
func (p *ptyProc) within(re *regexp.Regexp, d time.Duration) ([]string, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		loc := re.FindSubmatchIndex(p.out[p.seen:])
		var m []string
		if loc != nil {
			for i := 0; i < len(loc); i += 2 {
				if loc[i] >= 0 {
					m = append(m, string(p.out[p.seen+loc[i]:p.seen+loc[i+1]]))
				} else {
					m = append(m, "")
				}
			}
			p.seen += loc[1]
		}
		p.mu.Unlock()
		if m != nil {
			return m, true
		}
		select {
		case <-p.more:
		case <-deadline.C:
			return nil, false
		}
	}
}

// expect waits for re; the bound only catches hangs.
func (p *ptyProc) expect(re string) []string {
	p.t.Helper()
	m, ok := p.within(regexp.MustCompile(re), startTimeout)
	if !ok {
		p.mu.Lock()
		rest := string(p.out[p.seen:])
		p.mu.Unlock()
		p.t.Fatalf("no output matching %q; output since the last match: %q", re, rest)
	}
	return m
}

// wait waits for the process to exit and returns its exit code.
func (p *ptyProc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(stopTimeout):
		p.t.Fatalf("levers9 %v still running after %v", p.cmd.Args[1:], stopTimeout)
		return -1
	}
}

// A terminal session through the real binary on a pseudo-terminal:
// levers9 run -it starts a shell in an interactive job and attaches this
// terminal (keys, output, the window's size, Ctrl-C to the shell's
// foreground process); Ctrl-P Ctrl-Q detaches and the job keeps running;
// levers9 attach re-attaches and returns the shell's exit code, which the
// job records. Then levers9 exec on a running job: stdout and stderr kept
// apart, the exit code returned, stdin passed with -i. On both runtimes.
func TestTerminalSession(t *testing.T) {
	t.Parallel()
	for _, runtime := range []string{"process", "docker"} {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			terminalSession(t, runtime)
		})
	}
}

func terminalSession(t *testing.T, runtime string) {
	s, c, env := interactiveServerOn(t, runtime, "")
	// dash and busybox's sh read their prompt from the environment.
	run := startPTY(t, env, "run", "-it", "--queue", "inter", "--env", "PS1=lv9> ", "--", "sh")
	id := run.expect(`job (job_\w+) submitted to queue inter`)[1]
	run.expect(`lv9> `)

	run.type_("echo $((6*7))\r")
	run.expect(`42\r\n`)

	// The window's size at the start, then after a resize: the CLI hears
	// SIGWINCH and passes the size on, in its own time.
	run.type_("stty size\r")
	run.expect(`24 80\r\n`)
	if err := pty.Setsize(run.ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	resized := regexp.MustCompile(`40 100\r\n`)
	for tries := 0; ; tries++ {
		run.type_("stty size\r")
		if _, ok := run.within(resized, 2*time.Second); ok {
			break
		}
		if tries == 30 {
			run.expect(resized.String())
		}
	}

	// (Outputs are matched without what precedes them: a prompt may come
	// between a typed-ahead line's echo and its output.) Ctrl-C interrupts
	// the foreground command, not the shell: only an interrupted sleep
	// lets the next command print within the bound. A Ctrl-C may come
	// before the shell gave the terminal to sleep's process group (then it
	// misses sleep, and the next one flushes the line typed after it).
	run.type_("echo started; sleep 1000\r")
	run.expect(`started\r\n`)
	back := regexp.MustCompile(`back2\r\n`)
	for tries := 0; ; tries++ {
		run.type_("\x03")
		run.type_("echo back$((1+1))\r")
		if _, ok := run.within(back, 2*time.Second); ok {
			break
		}
		if tries == 30 {
			run.expect(back.String())
		}
	}

	run.type_("LEFT=behind\r")
	run.type_("\x10\x11") // Ctrl-P Ctrl-Q
	run.expect(`detached from service main of job ` + id)
	if code := run.wait(); code != 0 {
		t.Fatalf("levers9 run -it after detaching: exit %d, want 0", code)
	}
	if j := jobByID(t, s.URL, c.Token, id); j.Status != "RUNNING" {
		t.Fatalf("job after detaching: %+v, want RUNNING", j)
	}

	t.Run("exec", func(t *testing.T) {
		out, errOut, code := clientRun(t, env, "", "exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		if code != 3 || out != "out\n" || errOut != "err\n" {
			t.Errorf("exec: exit %d, stdout %q, stderr %q; want 3, out, err", code, out, errOut)
		}
		const input = "hello\nsecond line\n"
		out, errOut, code = clientRun(t, env, input, "exec", "-i", id, "--", "cat")
		if code != 0 || out != input {
			t.Errorf("exec -i cat: exit %d, stdout %q, stderr %q; want the input back", code, out, errOut)
		}
		// Without -i the command's input is closed at once.
		out, errOut, code = clientRun(t, env, input, "exec", id, "--", "cat")
		if code != 0 || out != "" {
			t.Errorf("exec cat without -i: exit %d, stdout %q, stderr %q; want nothing", code, out, errOut)
		}
		_, errOut, code = clientRun(t, env, "", "exec", id, "--", "/no/such/command")
		if code == 0 {
			t.Errorf("exec of a missing command: exit 0, stderr %q", errOut)
		}
	})

	// A command with a terminal of its own beside the shell.
	execTTY := startPTY(t, env, "exec", "-it", id, "--", "sh")
	execTTY.type_("stty size; tty\r")
	execTTY.expect(`24 80\r\n/dev/pts/\d+\r\n`)
	execTTY.type_("exit 5\r")
	if code := execTTY.wait(); code != 5 {
		t.Fatalf("levers9 exec -it after exit 5: exit %d, want 5", code)
	}

	// Re-attached: the earlier output is shown again, the shell is the one
	// left behind (its variables kept), and its exit code is levers9
	// attach's and the job's.
	attach := startPTY(t, env, "attach", id)
	attach.expect(`42\r\n`)
	attach.type_("echo $LEFT-$((3+4))\r")
	attach.expect(`behind-7\r\n`)
	attach.type_("exit 7\r")
	if code := attach.wait(); code != 7 {
		t.Fatalf("levers9 attach after exit 7: exit %d, want 7", code)
	}
	poll(t, "the job to end", func() bool { return jobByID(t, s.URL, c.Token, id).Status != "RUNNING" })
	var out struct {
		Node struct {
			Status   string
			Services []struct{ ExitCode *int }
		}
	}
	gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { status services { exitCode } } } }`, map[string]any{"id": id}, &out)
	if out.Node.Status != "ERROR" || len(out.Node.Services) != 1 || out.Node.Services[0].ExitCode == nil || *out.Node.Services[0].ExitCode != 7 {
		t.Fatalf("job after exit 7: %+v; want ERROR with the service's exit code 7", out.Node)
	}
	s.stop()
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/levers9/levers9/agent/supervise"
)

// execProc is a command exec'd in a running service (Terminals.Exec).
type execProc struct {
	svc   *service
	tty   *os.File    // the terminal's master, with TTY
	stdin *os.File    // a pipe, without TTY
	out   *outputPipe // stdout, or the master
	errs  *outputPipe // stderr; nil with TTY
	done  chan struct{}
	code  *int // once done
	why   string

	mu       sync.Mutex
	pgid     int
	killed   bool
	finished bool

	closeOnce sync.Once
}

var _ Terminal = (*execProc)(nil)

// exec starts req next to the service's command; it is registered with
// the service so that it ends with it.
func (s *service) exec(req ExecRequest) (*execProc, error) {
	e := &execProc{svc: s, done: make(chan struct{})}
	s.mu.Lock()
	if !s.running || s.exited {
		s.mu.Unlock()
		return nil, ErrNoService
	}
	if s.execs == nil {
		s.execs = map[*execProc]struct{}{}
	}
	s.execs[e] = struct{}{}
	s.mu.Unlock()
	if err := e.start(req); err != nil {
		e.finish(nil, err.Error())
		return nil, err
	}
	// The service may have ended while this started.
	e.mu.Lock()
	killed := e.killed
	e.mu.Unlock()
	if killed {
		e.kill()
	}
	return e, nil
}

// endExecs kills what was exec'd in the service and waits for it to end.
func (s *service) endExecs() {
	s.mu.Lock()
	var execs []*execProc
	for e := range s.execs {
		execs = append(execs, e)
	}
	s.mu.Unlock()
	for _, e := range execs {
		e.kill()
	}
	for _, e := range execs {
		<-e.done
	}
}

func (e *execProc) start(req ExecRequest) error {
	s := e.svc
	var slave, inR *os.File
	var err error
	if req.TTY {
		if e.tty, slave, err = openPTY(req.Size, s.user); err != nil {
			return err
		}
		defer closeAll(slave) // the process has its own
		e.out = &outputPipe{f: e.tty, idle: s.drain}
	} else {
		if inR, e.stdin, err = os.Pipe(); err != nil {
			return fmt.Errorf("input pipe: %w", err)
		}
		defer closeAll(inR)
	}
	if len(s.rt.cfg.Supervisor) > 0 {
		err = e.startSupervised(req, inR, slave)
	} else {
		err = e.startDirect(req, inR, slave)
	}
	if err != nil {
		closeAll(e.tty, e.stdin)
	}
	return err
}

// startSupervised starts a supervisor given the service's own options
// (user, cgroups, mounts): the command is where the service's is.
func (e *execProc) startSupervised(req ExecRequest, inR, slave *os.File) error {
	s := e.svc
	args := slices.Clone(s.supArgs)
	if req.TTY {
		args = append(args, "-tty")
	}
	args = append(append(args, "--"), req.Command...)
	sd, err := s.rt.supervise(supervise.Task{Args: args, Dir: s.dir, Env: s.env}, inR, slave)
	if err != nil {
		return err
	}
	word, rest := sd.statusLine()
	pid, _ := strconv.Atoi(rest)
	if word != "pid" || pid <= 1 {
		_, _, _, _ = s.rt.end(sd)
		closeAll(sd.outR, sd.errR)
		if word == "error" && rest != "" {
			return errors.New(rest)
		}
		return fmt.Errorf("the supervisor did not start the command (%s %q)", word, rest)
	}
	if req.TTY {
		// Only the supervisor's own words come here: the agent's log.
		for _, f := range []*os.File{sd.outR, sd.errR} {
			go func() {
				defer f.Close()
				ReadLines(f, MaxLineBytes, func(l string) { s.job.log.Warn("exec supervisor", "service", s.spec.Name, "line", l) })
			}()
		}
	} else {
		e.out = &outputPipe{f: sd.outR, idle: s.drain}
		e.errs = &outputPipe{f: sd.errR, idle: s.drain}
	}
	e.mu.Lock()
	e.pgid = pid
	e.mu.Unlock()
	go func() {
		_, code, why := supervisedExit(s.rt.end(sd))
		e.finish(code, why)
	}()
	return nil
}

// startDirect starts the command as the agent's child, as services are
// without a supervisor.
func (e *execProc) startDirect(req ExecRequest, inR, slave *os.File) error {
	s := e.svc
	path, err := lookPathIn(req.Command[0], s.env)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, req.Command[1:]...)
	cmd.Args[0] = req.Command[0]
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var outW, errW *os.File
	if slave != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	} else {
		var outR, errR *os.File
		if outR, outW, err = os.Pipe(); err != nil {
			return fmt.Errorf("output pipe: %w", err)
		}
		if errR, errW, err = os.Pipe(); err != nil {
			closeAll(outR, outW)
			return fmt.Errorf("output pipe: %w", err)
		}
		e.out, e.errs = &outputPipe{f: outR, idle: s.drain}, &outputPipe{f: errR, idle: s.drain}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	}
	if u := s.user; u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: []uint32{}}
	}
	dieWithAgent(cmd.SysProcAttr, syscall.SIGKILL)
	err = cmd.Start()
	closeAll(outW, errW) // the child has its copies
	if err != nil {
		if e.out != nil && e.errs != nil {
			closeAll(e.out.f, e.errs.f)
		}
		return err
	}
	pgid := cmd.Process.Pid
	e.mu.Lock()
	e.pgid = pgid
	e.mu.Unlock()
	go func() {
		waitErr := cmd.Wait()
		// What it left in its group goes with it, as a service's does.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_, code, why := exitState(cmd.ProcessState, waitErr)
		e.finish(code, why)
	}()
	return nil
}

// lookPathIn finds file as a shell of that environment would: in the
// folders of its PATH (the agent's own PATH may differ).
func lookPathIn(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", file)
}

// finish records how the process ended: its output is read to the end
// (see outputPipe) and Wait returns.
func (e *execProc) finish(code *int, why string) {
	e.mu.Lock()
	e.finished = true
	e.mu.Unlock()
	for _, p := range []*outputPipe{e.out, e.errs} {
		if p != nil {
			p.exit()
		}
	}
	e.code, e.why = code, why
	s := e.svc
	s.mu.Lock()
	delete(s.execs, e)
	s.mu.Unlock()
	close(e.done)
}

// kill ends the process and its group (the supervisor then whatever else
// it started).
func (e *execProc) kill() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.killed = true
	if e.pgid > 1 && !e.finished {
		_ = syscall.Kill(-e.pgid, syscall.SIGKILL)
	}
}

func (e *execProc) Stdin() io.WriteCloser {
	if e.tty != nil {
		return ttyInput{e.tty}
	}
	return e.stdin
}

func (e *execProc) Stdout() io.Reader {
	if e.tty != nil {
		return closedEOF{masterReader{e.out}}
	}
	return closedEOF{e.out}
}

func (e *execProc) Stderr() io.Reader {
	if e.errs == nil {
		return nil
	}
	return closedEOF{e.errs}
}

// closedEOF reads output that Close may close under the reader: that is
// its end.
type closedEOF struct{ r io.Reader }

func (c closedEOF) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

func (e *execProc) Resize(size Size) error {
	if e.tty == nil {
		return nil
	}
	if err := setSize(e.tty, size); err != nil {
		return fmt.Errorf("resizing the terminal: %w", err)
	}
	return nil
}

// Signal sends sig to the process's group.
func (e *execProc) Signal(sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished || e.pgid <= 1 {
		return nil
	}
	if err := syscall.Kill(-e.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling the command: %w", err)
	}
	return nil
}

func (e *execProc) Wait(ctx context.Context) (int, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if e.code == nil {
		return 0, fmt.Errorf("the command ended without an exit code: %s", e.why)
	}
	return *e.code, nil
}

// Close kills the process; its files are closed once it ended.
func (e *execProc) Close() error {
	e.closeOnce.Do(func() {
		e.kill()
		closeAll(e.stdin)
		go func() {
			<-e.done
			closeAll(e.tty)
			for _, p := range []*outputPipe{e.out, e.errs} {
				if p != nil {
					_ = p.f.Close()
				}
			}
		}()
	})
	return nil
}

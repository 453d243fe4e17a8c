package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// The process runtime has no images: a service whose blueprint is a base
// then only PIP and ENV steps (blueprints.Venv) runs in a Python virtual
// environment instead. The base step is not used: the environment is
// made with the node's own python3. One environment per blueprint key is
// built the first time a service needs it and kept for every later one.

// venvsDir is below Root: the default VenvDir.
const venvsDir = ".venvs"

// venvReady, inside an environment's folder, is written last (by rename):
// the folder is whole once it exists. The environment is built in place,
// not in a temporary folder renamed at the end, because pip writes the
// environment's absolute path into the scripts it installs (their #!
// lines); a folder without the marker is a build that did not finish and
// is deleted before building again.
const venvReady = ".levers9-ready"

// VenvBuildTimeout bounds one build of a virtual environment.
const VenvBuildTimeout = time.Hour

// venvBuild is one build under way; done closes when err is set.
type venvBuild struct {
	done chan struct{}
	err  error
	out  chan string // the build's output lines, for the service that started it
}

// venv returns the folder of v's environment, building it unless it is
// built already; a build under way for another service is waited for
// (built once per key). Lines of the build's output go to emit for the
// service whose start began the build. halt ends the wait (not the build:
// it is kept for the next service).
func (p *Process) venv(v *wire.Venv, emit func(Stream, string), halt <-chan struct{}) (string, bool, error) {
	if err := wire.CheckVenv(v); err != nil {
		return "", false, err
	}
	dir := filepath.Join(p.cfg.VenvDir, v.Key)
	if _, err := os.Stat(filepath.Join(dir, venvReady)); err == nil {
		return dir, true, nil
	}
	p.venvMu.Lock()
	b, waiting := p.venvs[v.Key]
	if !waiting {
		b = &venvBuild{done: make(chan struct{}), out: make(chan string, 64)}
		p.venvs[v.Key] = b
		go func() {
			b.err = p.buildVenv(dir, v, b.out)
			close(b.out)
			p.venvMu.Lock()
			delete(p.venvs, v.Key)
			p.venvMu.Unlock()
			close(b.done)
		}()
	}
	p.venvMu.Unlock()
	if waiting {
		emit(System, "levers9: waiting for the virtual environment "+short(v.Key)+" that another service is building")
	} else {
	relay:
		for {
			select {
			case line, ok := <-b.out:
				if !ok {
					break relay
				}
				emit(Stdout, line)
			case <-halt:
				go func() {
					for range b.out { // the build goes on for the next service
					}
				}()
				return "", false, errors.New("stopped while its virtual environment was being built")
			}
		}
	}
	select {
	case <-b.done:
	case <-halt:
		return "", false, errors.New("stopped while its virtual environment was being built")
	}
	if b.err != nil {
		return "", false, b.err
	}
	return dir, false, nil
}

func short(key string) string { return key[:min(12, len(key))] }

// buildVenv makes the environment at dir: python3 -m venv, then each PIP
// step with that environment's pip, sending every line of output to out.
// Only wheels are installed: building a source package would run its code
// as the agent, which may be root (and a shared cache must not depend on
// who built it).
func (p *Process) buildVenv(dir string, v *wire.Venv, out chan<- string) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), VenvBuildTimeout)
	defer cancel()
	log := p.log.With("venv", v.Key)
	log.Info("building a virtual environment", "steps", len(v.Steps))
	defer func() {
		if err != nil {
			log.Warn("virtual environment failed", "err", err)
			_ = os.RemoveAll(dir)
		}
	}()
	if err := os.MkdirAll(p.cfg.VenvDir, 0o711); err != nil {
		return fmt.Errorf("virtual environments folder: %w", err)
	}
	// What an earlier build that did not finish left.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing an unfinished virtual environment: %w", err)
	}
	env := buildEnv()
	out <- "levers9: building virtual environment " + short(v.Key) + " with the node's python3 (the blueprint's base is not used on the process runtime)"
	python3, err := sharedPython()
	if err != nil {
		return err
	}
	out <- "levers9: " + python3 + " -m venv"
	if err := runLogged(ctx, out, env, "", python3, "-m", "venv", dir); err != nil {
		return fmt.Errorf("python3 -m venv: %w", err)
	}
	python := filepath.Join(dir, "bin", "python")
	for i, st := range v.Steps {
		if st.Kind != wire.StepPip {
			continue
		}
		args := []string{"-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--only-binary=:all:"}
		args = append(args, p.cfg.VenvPipArgs...)
		shown := len(args)
		// Packages and requirements are names only (wire.CheckVenv): a
		// path, URL or option would run code or reach files as the agent.
		args = append(args, st.Packages...)
		if st.Requirements != "" {
			f, err := os.CreateTemp("", "levers9-requirements-*.txt")
			if err != nil {
				return fmt.Errorf("step %d: requirements file: %w", i+1, err)
			}
			defer os.Remove(f.Name())
			_, werr := f.WriteString(st.Requirements)
			if err := errors.Join(werr, f.Close()); err != nil {
				return fmt.Errorf("step %d: requirements file: %w", i+1, err)
			}
			args = append(args, "-r", f.Name())
		}
		out <- fmt.Sprintf("levers9: step %d/%d PIP %s", i+1, len(v.Steps), strings.Join(args[shown:], " "))
		if err := runLogged(ctx, out, env, dir, python, args...); err != nil {
			return fmt.Errorf("step %d (pip install): %w", i+1, err)
		}
	}
	// Jobs' users (other uids) read it, whatever the agent's umask; never
	// write: it is shared.
	if err := openToOthers(dir); err != nil {
		return fmt.Errorf("opening the virtual environment to jobs: %w", err)
	}
	marker := filepath.Join(dir, venvReady+".tmp")
	if err := os.WriteFile(marker, []byte(v.Key+"\n"), 0o644); err != nil {
		return fmt.Errorf("marking the virtual environment built: %w", err)
	}
	if err := os.Rename(marker, filepath.Join(dir, venvReady)); err != nil {
		return fmt.Errorf("marking the virtual environment built: %w", err)
	}
	out <- "levers9: virtual environment " + short(v.Key) + " built"
	log.Info("virtual environment built")
	return nil
}

// sharedPython is the first python3 on the agent's PATH in a folder that
// everyone may enter: the environment links to it, and jobs running as
// other users must be able to run it (root's ~/.pyenv/shims would not).
func sharedPython() (string, error) {
	for _, d := range filepath.SplitList(searchablePath(os.Getenv("PATH"))) {
		p := filepath.Join(d, "python3")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o001 != 0 {
			return p, nil
		}
	}
	return "", errors.New("no python3 that every user may run on the agent's PATH: install python3 (with venv) to make virtual environments")
}

// buildEnv is the agent's environment without its LEVERS9_* settings
// (which may hold secrets) and with pip told not to ask.
func buildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEVERS9_") && !strings.HasPrefix(kv, "PIP_") && !strings.HasPrefix(kv, "VIRTUAL_ENV=") && !strings.HasPrefix(kv, "PYTHON") {
			env = append(env, kv)
		}
	}
	return append(env, "PIP_NO_INPUT=1", "PYTHONUNBUFFERED=1")
}

// runLogged runs name with args, its stdout and stderr as lines on out;
// an error names the exit and the last line.
func runLogged(ctx context.Context, out chan<- string, env []string, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	var last string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ReadLines(r, 8192, func(line string) {
			last = line
			out <- line
		})
	}()
	err := cmd.Run()
	_ = w.Close()
	wg.Wait()
	if err != nil {
		if last != "" {
			return fmt.Errorf("%w: %s", err, last)
		}
		return err
	}
	return nil
}

// useVenv makes the service's virtual environment ready and puts it in
// its environment; false when the service ended instead (it is finished).
func (s *service) useVenv() bool {
	v := s.spec.Venv
	emit := func(stream Stream, line string) { s.job.emitLog(s.spec.Name, stream, line) }
	dir, cached, err := s.rt.venv(v, emit, s.halt)
	if err != nil {
		if reason := s.stoppedBeforeStart(); reason != "" {
			s.job.finish(s, Failed, nil, "stopped: "+reason, true)
			return false
		}
		s.job.finish(s, Failed, nil, "virtual environment "+short(v.Key)+": "+err.Error(), false)
		return false
	}
	if cached {
		emit(System, "levers9: virtual environment "+short(v.Key)+" (cached)")
	}
	if reason := s.stoppedBeforeStart(); reason != "" {
		s.job.finish(s, Failed, nil, "stopped: "+reason, true)
		return false
	}
	s.venvBin = filepath.Join(dir, "bin")
	s.env = venvEnv(s.env, dir, v, s.spec)
	return true
}

// venvEnv is env with the environment first on PATH, VIRTUAL_ENV, and the
// ENV steps' variables (in order; the service's own variables and what
// levers9 sets still win).
func venvEnv(env []string, dir string, v *wire.Venv, s ServiceSpec) []string {
	own := map[string]bool{}
	for _, e := range s.Env {
		own[e.Name] = true
	}
	for _, e := range s.SystemEnv {
		own[e.Name] = true
	}
	l := newEnvList()
	for _, kv := range env {
		l.set(kv)
	}
	for _, st := range v.Steps {
		for _, e := range st.Env {
			if !own[e.Name] && !strings.HasPrefix(e.Name, "LEVERS9_") {
				l.set(e.Name + "=" + e.Value)
			}
		}
	}
	path := filepath.Join(dir, "bin")
	if i, ok := l.index["PATH"]; ok {
		if rest := strings.TrimPrefix(l.list[i], "PATH="); rest != "" {
			path += string(filepath.ListSeparator) + rest
		}
	}
	l.set("PATH=" + path)
	l.set("VIRTUAL_ENV=" + dir)
	return l.list
}

// venvCommand is name, or the program of that name in the service's
// virtual environment when it has one there: the command is looked up in
// the agent's PATH otherwise, not the service's.
func (s *service) venvCommand(name string) string {
	if s.venvBin == "" || strings.ContainsRune(name, '/') {
		return name
	}
	full := filepath.Join(s.venvBin, name)
	if fi, err := os.Stat(full); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return full
	}
	return name
}

// openToOthers lets everyone read every file under dir (and run those its
// owner may run) and enter every folder.
func openToOthers(dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() | 0o044
		if d.IsDir() || mode&0o100 != 0 {
			mode |= 0o011
		}
		return os.Chmod(path, mode)
	})
}

package supervise

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// Supervise is the supervisor of one service: the agent starts it
// (cmd/levers9-supervise, or its own binary with Arg) with
//
//	[-uid N -gid N] [-cgroup DIR=HOME]... [-binds JSON] [-tty] -- COMMAND [ARGS...]
//
// in the service's working directory and environment, with its stdout and
// stderr on the log pipes and a status pipe as fd 3. The command inherits
// its stdin, stdout and stderr; with -tty, it runs instead on the
// terminal passed as fd 5 (the slave of a pseudo-terminal), in a session
// of its own with that terminal as its controlling terminal. It makes itself a
// child subreaper, so every process the command starts stays its
// descendant, even after setsid or double forks; it joins the service's
// cgroups only while it starts the command (as the job user, in a process
// group of its own), then returns to HOME. It writes "pid N" (or "error
// MESSAGE" when the command did not start) to the status pipe, forwards
// SIGTERM, SIGINT and SIGHUP to the command's process group, and when the command's
// main process exits, or the agent dies (SIGUSR1 as parent-death signal,
// or a new parent pid), it kills every descendant left and exits with the
// command's status, written to the status pipe too ("exit N" or
// "signal N"). It returns the exit code for main to exit with.
//
// Started with the single argument -warm, it first waits for its task:
// the arguments above, the working directory and the environment, read
// from fd 4 to its end (see Task). The runtime keeps one such
// supervisor started ahead, so a service's start does not wait for a
// program to load.
func Supervise(args []string) int {
	if len(args) == 1 && args[0] == WarmArg {
		var err error
		if args, err = awaitTask(); err != nil {
			if status := statusPipe(); status != nil {
				fmt.Fprintf(status, "error %v\n", err)
			}
			return 125
		}
	}
	fs := flag.NewFlagSet(Arg, flag.ContinueOnError)
	uid := fs.Int("uid", -1, "run the command as this uid")
	gid := fs.Int("gid", -1, "and this gid")
	var moves cgroupMoves
	fs.Var(&moves, "cgroup", "DIR=HOME: start the command in cgroup DIR, then return to HOME")
	bindsJSON := fs.String("binds", "", "JSON [{src, dst, ro}]: bind mounts in a mount namespace of the command's own")
	tty := fs.Bool("tty", false, "run the command on the terminal that is fd 5, as its controlling terminal")
	if err := fs.Parse(args); err != nil {
		return 125
	}
	status := statusPipe()
	report := func(format string, a ...any) {
		if status != nil {
			_, _ = fmt.Fprintf(status, format+"\n", a...)
		}
	}
	argv := fs.Args()
	if len(argv) == 0 {
		report("error no command")
		return 125
	}
	ppid := os.Getppid()
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		report("error becoming a subreaper: %v", e)
		return 125
	}
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGCHLD)

	if *bindsJSON != "" {
		var binds []Bind
		if err := json.Unmarshal([]byte(*bindsJSON), &binds); err != nil {
			report("error -binds: %v", err)
			return 125
		}
		// The namespace is this thread's; the command is forked from it.
		goruntime.LockOSThread()
		if err := bindMounts(binds); err != nil {
			report("error %v", err)
			return 125
		}
	}
	// As exec.Command finds it; started by syscall.ForkExec, not os/exec:
	// this process reaps its children itself, and os/exec's process handle
	// (a pidfd, probed with an extra fork) would only cost.
	path := argv[0]
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			report("error %v", err)
			return 127
		}
		path = lp
	}
	files := []uintptr{0, 1, 2}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var term *os.File
	if *tty {
		if term = terminalFD(); term == nil {
			report("error -tty: fd 5 is no terminal")
			return 125
		}
		files = []uintptr{term.Fd(), term.Fd(), term.Fd()}
		// A session of its own is a process group of its own too (the
		// same number), which signals reach as before.
		attr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	}
	if *uid >= 0 {
		// An empty Groups clears the supplementary groups (the agent's).
		attr.Credential = &syscall.Credential{Uid: uint32(*uid), Gid: uint32(*gid), Groups: []uint32{}}
	}
	self := os.Getpid()
	if err := moves.join(self); err != nil {
		moves.leave(self)
		report("error %v", err)
		return 125
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: files, Sys: attr})
	if err != nil {
		err = &os.PathError{Op: "fork/exec", Path: path, Err: err} // as os/exec says it
	}
	if term != nil {
		// Only the command's processes hold the terminal: when they are
		// gone, the agent reads the end of its output.
		_ = term.Close()
	}
	// The command's memory and CPU are the service's; this process's are not.
	if lerr := moves.leave(self); lerr != nil && err == nil {
		fmt.Fprintf(os.Stderr, "levers9: %v\n", lerr)
	}
	if err != nil {
		report("error %v", err)
		return 127
	}
	report("pid %d", pid)

	var mainStatus *syscall.WaitStatus
	reap := func() {
		for {
			var ws syscall.WaitStatus
			r, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if r <= 0 || err != nil {
				return
			}
			if r == pid {
				mainStatus = &ws
			}
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	orphaned := false
	for mainStatus == nil {
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGHUP:
				// The kernel's word that this process's group was orphaned
				// (the agent died) while it was stopped; else the command's.
				if os.Getppid() != ppid {
					orphaned = true
					killDescendants(self, pid, &mainStatus)
				} else {
					_ = syscall.Kill(-pid, syscall.SIGHUP)
				}
			case syscall.SIGTERM, syscall.SIGINT:
				_ = syscall.Kill(-pid, s.(syscall.Signal))
			case syscall.SIGUSR1:
				orphaned = true
				killDescendants(self, pid, &mainStatus)
			}
		case <-tick.C:
			if os.Getppid() != ppid {
				orphaned = true
				killDescendants(self, pid, &mainStatus)
			}
		}
		reap()
	}
	killDescendants(self, pid, &mainStatus)
	if orphaned {
		// The agent would have read them (out of memory?) and removed them.
		moves.remove()
	}

	ws := *mainStatus
	if ws.Signaled() {
		report("signal %d", int(ws.Signal()))
		return 128 + int(ws.Signal())
	}
	report("exit %d", ws.ExitStatus())
	return ws.ExitStatus()
}

// killDescendants kills the command's process group and every descendant
// of self until it has no child left, reaping them; main's status is
// recorded when it is reaped here.
func killDescendants(self, main int, mainStatus **syscall.WaitStatus) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_ = syscall.Kill(-main, syscall.SIGKILL)
		// A descendant either has a living parent (itself a descendant)
		// or was handed to this subreaper: with no child left there is
		// none, and the walk of /proc, the costly part, can be skipped.
		if !hasChildren(main, mainStatus) {
			return
		}
		for _, p := range Descendants(self) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			r, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return
			}
			if r <= 0 || err != nil {
				break
			}
			if r == main && *mainStatus == nil {
				*mainStatus = &ws
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "levers9: processes of the service survive SIGKILL")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hasChildren reaps what has ended and reports whether any child is left;
// main's status is recorded when it is reaped here.
func hasChildren(main int, mainStatus **syscall.WaitStatus) bool {
	for {
		var ws syscall.WaitStatus
		r, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return false
		}
		if r <= 0 || err != nil {
			return true
		}
		if r == main && *mainStatus == nil {
			*mainStatus = &ws
		}
	}
}

// awaitTask reads a warm supervisor's task from fd 4 and takes on its
// working directory and environment, which the command inherits.
func awaitTask() ([]string, error) {
	f := os.NewFile(4, "task")
	if f == nil {
		return nil, errors.New("no task pipe")
	}
	syscall.CloseOnExec(4)
	defer f.Close()
	b, err := io.ReadAll(f) // the agent closes its end once it wrote
	if err != nil {
		return nil, fmt.Errorf("reading the task: %w", err)
	}
	var t Task
	if err := t.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	if err := os.Chdir(t.Dir); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	os.Clearenv()
	for _, kv := range t.Env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("environment: %w", err)
		}
	}
	return t.Args, nil
}

// terminalFD is fd 5 when it is a terminal.
func terminalFD() *os.File {
	if _, err := unix.IoctlGetTermios(5, unix.TCGETS); err != nil {
		return nil
	}
	syscall.CloseOnExec(5)
	return os.NewFile(5, "tty")
}

// statusPipe is fd 3 when the agent passed one.
func statusPipe() *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(3, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil
	}
	// The command must not inherit it: a job could report a pid or an
	// exit of its choosing.
	syscall.CloseOnExec(3)
	return os.NewFile(3, "status")
}

// bindMounts gives the calling thread a mount namespace of its own, which
// shares nothing back with the host's, and binds every mount in it; what
// this thread forks inherits it, and it goes with the service's last
// process. The host sees only the empty mount points.
func bindMounts(binds []Bind) error {
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	for _, b := range binds {
		if err := bindMount(b); err != nil {
			return err
		}
	}
	return nil
}

// bindMount mounts b.Src at b.Dst. The mount point lies in a folder the
// job's uid owns, where another service of the job, already running,
// could swap a folder for a link to /etc between the check and the mount:
// so the point is opened without following any link and the mount made on
// what was opened.
func bindMount(b Bind) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, b.Dst, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return fmt.Errorf("mount point %s: %w", b.Dst, err)
	}
	defer unix.Close(fd)
	at := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := syscall.Mount(b.Src, at, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("mounting %s: %w", b.Dst, err)
	}
	if b.ReadOnly {
		// The fd still names the folder under the mount: remount by path,
		// now that the mount is in place and the path cannot be swapped
		// (the folder is covered).
		flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV)
		if err := syscall.Mount("", b.Dst, "", flags, ""); err != nil {
			return fmt.Errorf("mounting %s read-only: %w", b.Dst, err)
		}
	}
	return nil
}

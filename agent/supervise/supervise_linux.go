package supervise

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// Supervise is the supervisor of the process runtime's services: the
// agent starts it (cmd/levers9-supervise, or its own binary with Arg) with
// the single argument -warm (WarmArg) and its control socket as fd 3, and
// sends it tasks there one after another (see SendTask). A task's
// arguments are
//
//	[-uid N -gid N] [-cgroup DIR=HOME]... [-binds JSON] [-tty] -- COMMAND [ARGS...]
//
// and its command runs in the task's working directory and environment,
// with the task's stdin, stdout and stderr, or with -tty on the task's
// terminal (the slave of a pseudo-terminal), in a session of its own with
// that terminal as its controlling terminal. The supervisor is a child
// subreaper, so every process the command starts stays its descendant,
// even after setsid or double forks; it joins the service's cgroups only
// while it starts the command (as the job user, in a process group of its
// own), then returns to HOME. It writes "pid N" (or "error MESSAGE" when
// the command did not start) to the task's status pipe, forwards SIGTERM,
// SIGINT and SIGHUP to the command's process group, and when the
// command's main process exits, or the agent dies (SIGUSR1 as
// parent-death signal, or a new parent pid), it kills every descendant
// left and writes the command's status ("exit N" or "signal N"). Then it
// waits for the next task, unless the agent died, the task had mounts (a
// mount namespace of its own) or it could not leave the cgroups or clear
// the service's processes: it exits. Between tasks SIGTERM, SIGINT and
// SIGHUP end it as Go's defaults do (a Go program ignores SIGUSR1 it does
// not catch), and the agent's death, which closes the control socket,
// ends it. It returns the exit code for main to exit with.
func Supervise(args []string) int {
	if len(args) != 1 || args[0] != WarmArg {
		fmt.Fprintln(os.Stderr, "levers9: the supervisor is started by the agent, with -warm and a control socket")
		return 125
	}
	syscall.CloseOnExec(controlFD) // no command may send a task
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fmt.Fprintf(os.Stderr, "levers9: becoming a subreaper: %v\n", e)
		return 125
	}
	ppid := os.Getppid()
	w := watchSignals(ppid)
	hs := homes{}
	for {
		t, files, err := receiveTask()
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			if files[fileStatus] != nil {
				fmt.Fprintf(files[fileStatus], "error %v\n", err)
			}
			files.close()
			return 125
		}
		code, again := run(t, &files, w, hs)
		files.close()
		if !again {
			return code
		}
		if _, err := syscall.Write(controlFD, []byte{Ready}); err != nil {
			return code
		}
	}
}

// run runs one task and returns the command's exit code, and whether this
// process may run another.
func run(t Task, files *taskFiles, w *watch, hs homes) (code int, again bool) {
	status := files[fileStatus]
	report := func(format string, a ...any) {
		_, _ = fmt.Fprintf(status, format+"\n", a...)
	}
	stderr := files[fileStderr]
	// Waiting, it holds no folder of a job's: none of a file system the
	// operator may unmount.
	defer os.Chdir("/")
	if err := os.Chdir(t.Dir); err != nil {
		report("error working directory: %v", err)
		return 125, true
	}
	// The command inherits it; the next task replaces it whole.
	os.Clearenv()
	for _, kv := range t.Env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			report("error environment: %v", err)
			return 125, true
		}
	}
	fs := flag.NewFlagSet(Arg, flag.ContinueOnError)
	fs.SetOutput(stderr)
	uid := fs.Int("uid", -1, "run the command as this uid")
	gid := fs.Int("gid", -1, "and this gid")
	var moves cgroupMoves
	fs.Var(&moves, "cgroup", "DIR=HOME: start the command in cgroup DIR, then return to HOME")
	bindsJSON := fs.String("binds", "", "JSON [{src, dst, ro}]: bind mounts in a mount namespace of the command's own")
	tty := fs.Bool("tty", false, "run the command on the task's terminal, as its controlling terminal")
	if err := fs.Parse(t.Args); err != nil {
		report("error %v", err)
		return 125, true
	}
	argv := fs.Args()
	if len(argv) == 0 {
		report("error no command")
		return 125, true
	}
	w.begin(moves.thaw)
	defer w.end()

	if *bindsJSON != "" {
		// The namespace is this thread's, kept to the process's end: no
		// other task runs here.
		again = false
		var binds []Bind
		if err := json.Unmarshal([]byte(*bindsJSON), &binds); err != nil {
			report("error -binds: %v", err)
			return 125, false
		}
		// The command is forked from this thread.
		goruntime.LockOSThread()
		if err := bindMounts(binds); err != nil {
			report("error %v", err)
			return 125, false
		}
	} else {
		again = true
	}
	// As exec.Command finds it; started by syscall.ForkExec, not os/exec:
	// this process reaps its children itself, and os/exec's process handle
	// (a pidfd, probed with an extra fork) would only cost.
	path := argv[0]
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			report("error %v", err)
			return 127, again
		}
		path = lp
	}
	stdio := []uintptr{files[fileStdin].Fd(), files[fileStdout].Fd(), stderr.Fd()}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if *tty {
		term := files[fileTTY]
		if term == nil {
			report("error -tty: no terminal")
			return 125, again
		}
		if _, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS); err != nil {
			report("error -tty: no terminal: %v", err)
			return 125, again
		}
		stdio = []uintptr{term.Fd(), term.Fd(), term.Fd()}
		// A session of its own is a process group of its own too (the
		// same number), which signals reach as before.
		attr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	}
	if *uid >= 0 {
		// An empty Groups clears the supplementary groups (the agent's).
		attr.Credential = &syscall.Credential{Uid: uint32(*uid), Gid: uint32(*gid), Groups: []uint32{}}
	}
	self := os.Getpid()
	pid, err, lerr := forkInCgroups(moves, hs, path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: stdio, Sys: attr})
	if term := files[fileTTY]; term != nil {
		// Only the command's processes hold the terminal: when they are
		// gone, the agent reads the end of its output.
		_ = term.Close()
		files[fileTTY] = nil
	}
	if lerr != nil {
		fmt.Fprintf(stderr, "levers9: %v\n", lerr)
		again = false // it would count against the next service
	}
	if errors.Is(err, errJoin) {
		report("error %v", err)
		return 125, again
	}
	if err != nil {
		report("error %v", err)
		return 127, again
	}
	report("pid %d", pid)

	w.started(pid)
	mainStatus := waitFor(pid)
	orphaned := w.end()
	if !killDescendants(self, pid, &mainStatus, stderr) {
		again = false
	}
	if orphaned {
		// The agent would have read them (out of memory?) and removed them.
		moves.remove()
		again = false
	}
	if mainStatus == nil { // wait4 failed: not a case Linux has
		report("error the command's status is lost")
		return 125, false
	}

	ws := *mainStatus
	if ws.Signaled() {
		report("signal %d", int(ws.Signal()))
		return 128 + int(ws.Signal()), again
	}
	report("exit %d", ws.ExitStatus())
	return ws.ExitStatus(), again
}

// waitFor reaps children until pid is reaped, and returns its status: nil
// if wait4 fails.
func waitFor(pid int) *syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		r, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return nil
		case r == pid:
			return &ws
		}
	}
}

// killAll kills the command's process group and every descendant of
// self; killDescendants reaps them after.
func killAll(self, main int) {
	_ = syscall.Kill(-main, syscall.SIGKILL)
	for _, p := range Descendants(self) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// errJoin is in the error of a command not started for want of its cgroups.
var errJoin = errors.New("joining cgroup")

// forkInCgroups starts the command in the service's cgroups: the thread
// that forks it joins them (the command is born there) and goes back to
// the supervisor's own after, for the command's memory and CPU are the
// service's and the supervisor's are not. err is the start's (errJoin in
// it when the cgroups could not be joined), leaveErr the way back's.
func forkInCgroups(moves cgroupMoves, hs homes, path string, argv []string, attr *syscall.ProcAttr) (pid int, err, leaveErr error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if err = moves.join(hs); err != nil {
		err = fmt.Errorf("%w: %w", errJoin, err)
	} else if pid, err = syscall.ForkExec(path, argv, attr); err != nil {
		err = &os.PathError{Op: "fork/exec", Path: path, Err: err} // as os/exec says it
	}
	return pid, err, moves.leave(hs)
}

// killDescendants kills the command's process group and every descendant
// of self until it has no child left, reaping them; main's status is
// recorded when it is reaped here. False: some survived SIGKILL (said on
// stderr).
func killDescendants(self, main int, mainStatus **syscall.WaitStatus, stderr io.Writer) bool {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_ = syscall.Kill(-main, syscall.SIGKILL)
		// A descendant either has a living parent (itself a descendant)
		// or was handed to this subreaper: with no child left there is
		// none, and the walk of /proc, the costly part, can be skipped.
		if !hasChildren(main, mainStatus) {
			return true
		}
		killAll(self, main)
		for {
			var ws syscall.WaitStatus
			r, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return true
			}
			if r <= 0 || err != nil {
				break
			}
			if r == main && *mainStatus == nil {
				*mainStatus = &ws
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(stderr, "levers9: processes of the service survive SIGKILL")
			return false
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

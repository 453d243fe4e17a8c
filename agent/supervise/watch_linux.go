package supervise

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// watch handles a supervisor's signals for its whole life, in a goroutine
// of its own, while the main one waits for the task's command, blocked in
// wait4. During a task it forwards SIGTERM, SIGINT and SIGHUP to the
// command's process group, and kills every process of the service when
// the agent dies (SIGUSR1 as parent-death signal, SIGHUP to an orphaned
// group, or a new parent pid, checked every second). Between tasks
// SIGTERM, SIGINT and SIGHUP end the supervisor, as Go's defaults would;
// SIGUSR1 is ignored, as Go ignores it (the agent's death closes the
// control socket, which ends a waiting supervisor).
type watch struct {
	self, ppid int
	tick       *time.Ticker // running only during a task

	mu       sync.Mutex
	busy     bool        // a task is under way
	pid      int         // its command, once started
	pending  []os.Signal // the command's, come before it started
	orphaned bool        // the agent died during the task
	// thaw thaws the task's cgroups, which the agent may have frozen (a
	// frozen process holds even SIGKILL); nil: none.
	thaw func()
}

func watchSignals(ppid int) *watch {
	w := &watch{self: os.Getpid(), ppid: ppid, tick: time.NewTicker(time.Hour)}
	w.tick.Stop()
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	go func() {
		for {
			select {
			case s := <-sigs:
				w.signal(s.(syscall.Signal))
			case <-w.tick.C:
				w.mu.Lock()
				if os.Getppid() != w.ppid {
					w.orphan()
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// begin marks a task under way: signals are its command's from now.
func (w *watch) begin(thaw func()) {
	w.mu.Lock()
	w.busy, w.pid, w.pending, w.orphaned, w.thaw = true, 0, nil, false, thaw
	w.mu.Unlock()
	w.tick.Reset(time.Second)
}

// started gives the command's pid; the signals that came before go to it.
func (w *watch) started(pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pid = pid
	if w.orphaned {
		w.orphan()
	}
	for _, s := range w.pending {
		_ = syscall.Kill(-pid, s.(syscall.Signal))
	}
	w.pending = nil
}

// end marks the task over, its command reaped, and reports whether the
// agent died meanwhile. The reaped pid is not signalled again: one
// signal may still have gone to its group (of the service's processes,
// if any is left) between the reap and end; the number comes back to
// another process only when Linux's pid allocation wraps around.
func (w *watch) end() (orphaned bool) {
	w.tick.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy, w.pid, w.pending = false, 0, nil
	return w.orphaned
}

func (w *watch) signal(s syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	agentDied := s == syscall.SIGUSR1 ||
		// The kernel's word that this process's group was orphaned (the
		// agent died) while it was stopped; else the command's.
		s == syscall.SIGHUP && os.Getppid() != w.ppid
	switch {
	case !w.busy:
		if s != syscall.SIGUSR1 {
			signal.Reset(s)
			_ = syscall.Kill(w.self, s) // dies of it
		}
	case agentDied:
		w.orphan()
	case w.pid == 0:
		w.pending = append(w.pending, s)
	default:
		_ = syscall.Kill(-w.pid, s)
	}
}

// orphan kills every process of the service (none yet, before its
// command started); w.mu is held.
func (w *watch) orphan() {
	w.orphaned = true
	if w.pid != 0 {
		killAll(w.self, w.pid)
		// A frozen service (the agent froze it, cut off from the server)
		// dies once thawed; one stopped by SIGSTOP dies of SIGKILL anyway.
		if w.thaw != nil {
			w.thaw()
		}
	}
}

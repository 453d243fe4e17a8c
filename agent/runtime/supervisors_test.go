package runtime

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stdout is what a job's services wrote on stdout, in order.
func stdout(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		if l, ok := ev.(LogEvent); ok && l.Stream == Stdout {
			out = append(out, l.Text)
		}
	}
	return out
}

// Supervisors run services in turn, and nothing of one service reaches
// the next: not its variables, nor its cgroups (the supervisor waits in
// the agent's).
func TestSupervisorRunsServicesInTurn(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	supervisors := map[string]int{}
	const jobs = 5
	for i := range jobs {
		c := start(t, p, JobSpec{ID: fmt.Sprintf("job_turn%d", i), Services: []ServiceSpec{{
			Name: "s", MemoryMiB: 64,
			Command: []string{"sh", "-c", `echo "$PPID"; env | grep -c '^SECRET_' || true`},
			Env:     []EnvVar{{Name: fmt.Sprintf("SECRET_%d", i), Value: "x"}},
		}}})
		res, evs := c.wait(t)
		out := stdout(evs)
		if res.Status != Complete || len(out) != 2 {
			t.Fatalf("job %d: result %+v, output %q\n%s", i, res, out, dump(evs))
		}
		supervisors[out[0]]++
		if out[1] != "1" {
			t.Errorf("job %d sees %s SECRET_ variables, want its own only", i, out[1])
		}
		// Waiting again, it is back in the agent's cgroups: every thread
		// of it (on cgroup v1 a thread moves alone).
		threads, err := filepath.Glob("/proc/" + out[0] + "/task/*/cgroup")
		if err != nil || len(threads) == 0 {
			t.Errorf("job %d: its supervisor waits no more: %v", i, err)
		}
		for _, f := range threads {
			if cg, err := os.ReadFile(f); err != nil {
				t.Errorf("job %d: its supervisor waits no more: %v", i, err)
			} else if string(cg) != string(own) {
				t.Errorf("job %d: its supervisor's thread %s waits in cgroups %q, want the agent's %q", i, f, cg, own)
			}
		}
	}
	// One started ahead and one given back: at most two for jobs run one
	// after another.
	if len(supervisors) > 2 {
		t.Errorf("%d jobs one after another had %d supervisors (%v), want them reused", jobs, len(supervisors), supervisors)
	}
}

// A supervisor that died while it waited is replaced when a service
// needs it: the service starts.
func TestSupervisorDiedWaiting(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	for i := range 2 {
		c := start(t, p, JobSpec{ID: fmt.Sprintf("job_died%d", i), Services: []ServiceSpec{{Name: "s", Command: []string{"true"}}}})
		if res, evs := c.wait(t); res.Status != Complete {
			t.Fatalf("job %d: result %+v\n%s", i, res, dump(evs))
		}
		// Kill every supervisor waiting, and put it back as if alive.
		var waiting []*supervisor
		for len(p.idle) > 0 {
			sv := <-p.idle
			if err := sv.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			_, _ = sv.cmd.Process.Wait() // its socket end is closed now
			waiting = append(waiting, sv)
		}
		if len(waiting) == 0 {
			t.Fatal("no supervisor waits after a job")
		}
		for _, sv := range waiting {
			p.idle <- sv
		}
	}
}

// A supervisor that bound a job's mounts did so in a mount namespace of
// its own, which it keeps: it runs no other service. The next job's
// supervisor is in the agent's namespace, and the folder the first job
// mounted is not in sight.
func TestSupervisorWithMountsRunsNoOtherService(t *testing.T) {
	t.Parallel()
	needRoot(t)
	p := newProcessWith(t, ProcessConfig{Root: reachableRoot(t), UIDs: testUIDs(95, 8)})
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	bucket := t.TempDir()
	if err := os.WriteFile(filepath.Join(bucket, "private.txt"), []byte("first job's"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The command's namespace is the one its supervisor forked it in.
	script := `echo "$PPID $(readlink /proc/self/ns/mnt)"; cat data/private.txt 2>/dev/null || echo none`
	run := func(id string, mounts []Mount) (supervisor, ns, seen string) {
		t.Helper()
		c := start(t, p, JobSpec{ID: id, Mounts: mounts, Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c", script}}}})
		res, evs := c.wait(t)
		out := stdout(evs)
		if res.Status != Complete || len(out) != 2 {
			t.Fatalf("%s: result %+v, output %q\n%s", id, res, out, dump(evs))
		}
		supervisor, ns, _ = strings.Cut(out[0], " ")
		return supervisor, ns, out[1]
	}
	sup, ns, seen := run("job_mounts", []Mount{{Path: "/data", Dir: bucket}})
	if ns == own || seen != "first job's" {
		t.Fatalf("the job with mounts: namespace %s (the agent's: %s), its file %q", ns, own, seen)
	}
	if _, err := os.Stat("/proc/" + sup); err == nil {
		t.Errorf("the supervisor %s of the job with mounts still lives after it", sup)
	}
	for i := range 3 {
		sup2, ns2, seen2 := run(fmt.Sprintf("job_after%d", i), nil)
		if sup2 == sup || ns2 != own || seen2 != "none" {
			t.Errorf("a job after it: supervisor %s (the first: %s), namespace %s (the agent's: %s), sees %q", sup2, sup, ns2, own, seen2)
		}
	}
}

// The supervisors a burst of services leaves waiting are stopped, but
// one, once none has been taken for a while.
func TestIdleSupervisorsAreTrimmed(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	p.trimAfter = 50 * time.Millisecond
	const jobs = 3
	var cs []*collector
	for i := range jobs {
		cs = append(cs, start(t, p, JobSpec{ID: fmt.Sprintf("job_burst%d", i), Services: []ServiceSpec{
			{Name: "a", Command: []string{"sh", "-c", "echo $PPID; sleep 0.3"}},
			{Name: "b", Command: []string{"sh", "-c", "echo $PPID; sleep 0.3"}},
		}}))
	}
	supervisors := map[string]bool{}
	for i, c := range cs {
		res, evs := c.wait(t)
		if res.Status != Complete {
			t.Fatalf("job %d: %+v\n%s", i, res, dump(evs))
		}
		for _, pid := range stdout(evs) {
			supervisors[pid] = true
		}
	}
	if len(supervisors) != 2*jobs {
		t.Fatalf("%d services at once ran under %d supervisors", 2*jobs, len(supervisors))
	}
	// The trim stops them after it let go of the pool: until they are gone.
	alive := func() (n int) {
		for pid := range supervisors {
			if _, err := os.Stat("/proc/" + pid); err == nil {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(hang); ; time.Sleep(10 * time.Millisecond) {
		p.idleMu.Lock()
		waiting, armed := len(p.idle), p.trim != nil
		p.idleMu.Unlock()
		left := alive()
		if waiting == 1 && !armed && left <= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d supervisors wait (trim armed: %v), %d of the burst's live; want 1 waiting, at most 1 of the burst's", waiting, armed, left)
		}
	}
}

// Orphans a service leaves are reaped while it runs, not at its end: their
// zombies would hold the service's pids (its pids.max) meanwhile.
func TestSupervisorReapsOrphansWhileTheServiceRuns(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	// Each inner sh leaves a sleep behind, handed to the supervisor (the
	// subreaper, the outer sh's parent) when the inner sh exits.
	script := `for i in 1 2 3 4 5; do sh -c 'sleep 0.05 &'; done; sleep 1
awk -v p="$PPID" '$4 == p && $3 == "Z"' /proc/[0-9]*/stat | wc -l`
	c := start(t, p, JobSpec{ID: "job_orphans", Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c", script}}}})
	res, evs := c.wait(t)
	out := stdout(evs)
	if res.Status != Complete || len(out) != 1 {
		t.Fatalf("result %+v, output %q\n%s", res, out, dump(evs))
	}
	if strings.TrimSpace(out[0]) != "0" {
		t.Errorf("%s zombies of the service's orphans wait for its end, want none", out[0])
	}
}

// A signal sent to a supervisor during a task reaches its command's
// process group; one sent to a waiting supervisor ends it.
func TestSupervisorForwardsSignals(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	script := `trap 'echo got TERM; exit 3' TERM; echo "$PPID"; while :; do sleep 0.05; done`
	c := start(t, p, JobSpec{ID: "job_forward", Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c", script}}}})
	ev := c.waitFor(t, "the supervisor's pid", func(ev Event) bool {
		l, ok := ev.(LogEvent)
		return ok && l.Stream == Stdout
	})
	sup, err := strconv.Atoi(ev.(LogEvent).Text)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(sup, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res, evs := c.wait(t)
	out := stdout(evs)
	if len(res.Services) != 1 || res.Services[0].ExitCode == nil || *res.Services[0].ExitCode != 3 || !slices.Contains(out, "got TERM") {
		t.Fatalf("result %+v, output %q, want the command's trap to end it with 3\n%s", res, out, dump(evs))
	}
	if !alive(sup) {
		t.Fatal("the supervisor died of its command's signal")
	}
	if err := syscall.Kill(sup, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	gone(t, sup)
}

// A service's stdin is /dev/null, read-only: one the runtime shares
// among all of them, so none may write to it.
func TestServicesReadAnEmptyStdin(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	for i := range 2 {
		c := start(t, p, JobSpec{ID: fmt.Sprintf("job_stdin%d", i), Services: []ServiceSpec{{Name: "main", Command: []string{"sh", "-c",
			`readlink /proc/self/fd/0; cat; echo x >&0 2>/dev/null && echo wrote || echo read-only`}}}})
		_, evs := c.wait(t)
		if got, want := strings.Join(stdout(evs), ","), "/dev/null,read-only"; got != want {
			t.Errorf("job %d wrote %q, want %q", i, got, want)
		}
	}
}

// At Info, a job's services say nothing of their lives unless one fails
// by itself: the agent logs a job's start and end.
func TestServiceEndsLoggedOnlyWhenFailed(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(b)
	}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	p := newProcessWith(t, ProcessConfig{Root: t.TempDir(), Logger: logger})
	start(t, p, JobSpec{ID: "job_quiet", Services: []ServiceSpec{{Name: "ok", Command: []string{"true"}}}}).wait(t)
	start(t, p, JobSpec{ID: "job_loud", Services: []ServiceSpec{{Name: "bad", Command: []string{"false"}}}}).wait(t)
	mu.Lock()
	defer mu.Unlock()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.Contains(l, "job=") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="service ended"`) || !strings.Contains(lines[0], "job=job_loud") {
		t.Errorf("logged at Info:\n%s\nwant the failed service's end alone", strings.Join(lines, "\n"))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// No two services share their stdin's open file: what one job sets on it
// (here O_NONBLOCK) never shows in another's.
func TestServicesDoNotShareStdin(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	for i := range 2 {
		c := start(t, p, JobSpec{ID: fmt.Sprintf("job_ownstdin%d", i), Services: []ServiceSpec{helperService(t, "main", "stdinflags")}})
		_, evs := c.wait(t)
		if got := strings.Join(stdout(evs), ","); got != "nonblock=false" {
			t.Errorf("job %d's stdin: %q, want nonblock=false", i, got)
		}
	}
}

package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// counter prints 1, 2, 3… as fast as a shell sleeping 20 ms a line can.
var counter = []string{"sh", "-c", `i=0; while :; do i=$((i+1)); echo $i; sleep 0.02; done`}

// lastCount is the highest number service "count" printed so far.
func lastCount(c *collector) int {
	n := 0
	for _, l := range logs(c.all(), "count", Stdout) {
		if v, err := strconv.Atoi(l); err == nil && v > n {
			n = v
		}
	}
	return n
}

// stillFrozen fails unless the service prints nothing more for a while:
// a frozen process cannot, whatever the machine's speed.
func stillFrozen(t *testing.T, c *collector) {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // what it wrote before the freeze is read
	before := lastCount(c)
	time.Sleep(time.Second)
	if after := lastCount(c); after != before {
		t.Fatalf("a frozen service went on printing: %d, then %d", before, after)
	}
}

func waitCount(t *testing.T, c *collector, above int) {
	t.Helper()
	c.waitFor(t, "a count above "+strconv.Itoa(above), func(ev Event) bool {
		l, ok := ev.(LogEvent)
		if !ok || l.Service != "count" {
			return false
		}
		v, err := strconv.Atoi(l.Text)
		return err == nil && v > above
	})
}

// procState is the State line of /proc/PID/status ("T (stopped)").
func procState(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "State:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func running(t *testing.T, c *collector) StateEvent {
	t.Helper()
	return c.waitFor(t, "RUNNING", func(ev Event) bool {
		s, ok := ev.(StateEvent)
		return ok && s.State == Running
	}).(StateEvent)
}

// A frozen job runs no code and is not ended; thawed it goes on where it
// was; a Stop of a frozen job kills it at once, whatever the grace.
func testFreezeThawStop(t *testing.T, p *Process, check func(t *testing.T, j *job, pid int, frozen bool)) {
	c := start(t, p, JobSpec{ID: "job_freeze", Services: []ServiceSpec{{Name: "count", Command: counter}}})
	pid := running(t, c).PID
	waitCount(t, c, 3)
	j := c.job.(*job)
	fz, ok := c.job.(Freezer)
	if !ok {
		t.Fatal("a process job is no Freezer")
	}
	ctx := context.Background()
	if err := fz.Freeze(ctx); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	check(t, j, pid, true)
	stillFrozen(t, c)
	select {
	case <-c.job.Done():
		t.Fatal("a frozen job ended")
	default:
	}
	if err := fz.Thaw(ctx); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	check(t, j, pid, false)
	waitCount(t, c, lastCount(c))

	if err := fz.Freeze(ctx); err != nil {
		t.Fatalf("Freeze again: %v", err)
	}
	check(t, j, pid, true)
	c.job.Stop("not wanted by the server", time.Hour)
	_, evs := c.wait(t)
	last := states(evs, "count")
	if end := last[len(last)-1]; end.State != Failed || !strings.Contains(end.Reason, "not wanted by the server") {
		t.Fatalf("end %+v; events:\n%s", end, dump(evs))
	}
	gone(t, pid)
}

// With cgroups, the service's cgroup freezer freezes it.
func TestFreezeByCgroup(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	p := newProcess(t)
	if len(p.cgroups.hier) == 0 {
		t.Skip("no writable cgroups: " + p.cgroups.why)
	}
	testFreezeThawStop(t, p, func(t *testing.T, j *job, pid int, frozen bool) {
		s := j.services[0]
		dir := s.cgroup.freezerDir()
		if dir == "" {
			t.Fatal("the service has no freezer cgroup")
		}
		file, want := filepath.Join(dir, "freezer.state"), "THAWED"
		if frozen {
			want = "FROZEN"
		}
		if p.cgroups.v2 {
			file, want = filepath.Join(dir, "cgroup.freeze"), "0"
			if frozen {
				want = "1"
			}
		}
		if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != want {
			t.Fatalf("%s = %q (%v), want %s", file, b, err, want)
		}
	})
}

// Without a cgroup (no supervisor) the service's process group is stopped
// by SIGSTOP and continued by SIGCONT.
func TestFreezeBySignal(t *testing.T) {
	t.Parallel()
	p, err := NewProcess(ProcessConfig{Root: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	testFreezeThawStop(t, p, func(t *testing.T, j *job, pid int, frozen bool) {
		// Stopped, or a shell in vfork waiting for a stopped child;
		// thawed, the count going on shows it.
		if st := procState(pid); frozen && !strings.HasPrefix(st, "T") && !strings.HasPrefix(st, "D") {
			t.Fatalf("process %d: State %q, want stopped", pid, st)
		}
	})
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testUIDs is a range of uids per test, so that parallel tests do not
// take each other's (runtimes in one process exclude each other too, but
// then "the lowest free" depends on the other test).
func testUIDs(n, count uint32) UIDRange {
	return UIDRange{First: 1_899_000_000 + n*1000, Count: count}
}

// needRoot skips a test that switches users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running jobs as uids of their own needs root; this test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
}

// reachableRoot is a runtime root that job users may pass through, as an
// agent's is (t.TempDir's folders are 0700).
func reachableRoot(t *testing.T) string {
	t.Helper()
	top, err := os.MkdirTemp("", "levers9-uids-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(top, "jobs")
}

// lineAfter waits for a stdout line of service that starts with prefix and
// returns the rest.
func lineAfter(t *testing.T, c *collector, service, prefix string) string {
	t.Helper()
	ev := c.waitFor(t, service+"'s "+prefix+"line", func(ev Event) bool {
		l, ok := ev.(LogEvent)
		return ok && l.Service == service && l.Stream == Stdout && strings.HasPrefix(l.Text, prefix)
	})
	return strings.TrimPrefix(ev.(LogEvent).Text, prefix)
}

// Two jobs at once run as different uids, and neither can read the
// other's working directory (by path or through /proc) nor signal its
// processes.
func TestJobsRunAsUIDsOfTheirOwn(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(1, 4)
	p := newProcessWith(t, ProcessConfig{Root: reachableRoot(t), UIDs: r})

	a := start(t, p, JobSpec{ID: "job_a", Services: []ServiceSpec{{Name: "a", Command: []string{"sh", "-c",
		`echo secret > secret.txt; echo "uid $(id -u)"; echo "pid $$"; exec sleep 100`}}}})
	uidA := lineAfter(t, a, "a", "uid ")
	pidA := lineAfter(t, a, "a", "pid ")
	secret := filepath.Join(p.cfg.Root, "job_a", "a", "secret.txt")

	b := start(t, p, JobSpec{ID: "job_b", Services: []ServiceSpec{{Name: "b", Command: []string{"sh", "-c", `id -u; id -G; stat -c '%u %g %a' .
echo "HOME=$HOME USER=$USER LOGNAME=$LOGNAME"
echo mine > mine.txt; cat mine.txt
cat ` + secret + ` || echo cat-denied
ls /proc/` + pidA + `/cwd/ || echo cwd-denied
ls /proc/` + pidA + `/root/ || echo root-denied
kill -0 $$ && echo kill-own
kill -0 ` + pidA + ` || echo kill-denied`}}}})
	res, evs := b.wait(t)
	if res.Status != Complete {
		t.Fatalf("job_b: %+v\n%s", res, dump(evs))
	}
	uidB := r.First + 1
	dirB := filepath.Join(p.cfg.Root, "job_b", "b")
	name := fmt.Sprintf("levers9-job-%d", uidB)
	want := []string{
		strconv.Itoa(int(uidB)),
		strconv.Itoa(int(uidB)), // its gid alone: no supplementary groups
		fmt.Sprintf("%d %d 700", uidB, uidB),
		"HOME=" + dirB + " USER=" + name + " LOGNAME=" + name,
		"mine",
		"cat-denied", "cwd-denied", "root-denied", "kill-own", "kill-denied",
	}
	if out := logs(evs, "b", Stdout); strings.Join(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("job_b printed\n%s\nwant\n%s\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"), dump(evs))
	}
	if uidA != strconv.Itoa(int(r.First)) {
		t.Errorf("job_a ran as uid %s, want %d (the lowest of the range)", uidA, r.First)
	}
	// The kernel said no, for the reason the test is about.
	errs := strings.Join(logs(evs, "b", Stderr), "\n")
	if strings.Count(errs, "Permission denied") < 3 || !strings.Contains(errs, "Operation not permitted") {
		t.Errorf("job_b's errors:\n%s", errs)
	}
	// job_a was not disturbed, and its secret is intact.
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret\n" {
		t.Errorf("job_a's file: %q, %v", b, err)
	}
	if st := states(a.all(), "a"); len(st) != 2 || st[1].State != Running {
		t.Errorf("job_a's states: %+v", st)
	}
	a.job.Stop("done", 0)
	a.wait(t)
}

// A uid goes to the next job only after its job ended, the lowest free
// first; when all are taken, a job does not start and says why.
func TestJobUIDsAreReusedOnlyAfterTheirJobEnded(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(2, 2)
	p := newProcessWith(t, ProcessConfig{Root: reachableRoot(t), UIDs: r})
	uidOf := func(c *collector, service string) string { return lineAfter(t, c, service, "uid ") }
	job := func(id string) JobSpec {
		return JobSpec{ID: id, Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c", `echo "uid $(id -u)"; exec sleep 100`}}}}
	}
	one := start(t, p, job("job_one"))
	two := start(t, p, job("job_two"))
	if u1, u2 := uidOf(one, "s"), uidOf(two, "s"); u1 != strconv.Itoa(int(r.First)) || u2 != strconv.Itoa(int(r.Last())) {
		t.Fatalf("uids %s and %s, want %d and %d", u1, u2, r.First, r.Last())
	}
	_, err := p.Start(context.Background(), job("job_three"))
	if !errors.Is(err, ErrNoFreeUID) || !strings.Contains(err.Error(), "no free job uid") {
		t.Fatalf("a third job with every uid taken: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(p.cfg.Root, "job_three")); !os.IsNotExist(err) {
		t.Errorf("the job that did not start left a working directory: %v", err)
	}
	one.job.Stop("done", 0)
	one.wait(t)
	if _, err := os.Lstat(filepath.Join(p.cfg.Root, "job_one")); !os.IsNotExist(err) {
		t.Errorf("job_one's working directory is left: %v", err)
	}
	four := start(t, p, job("job_four"))
	if u := uidOf(four, "s"); u != strconv.Itoa(int(r.First)) {
		t.Errorf("the next job runs as %s, want %d, the uid job_one gave back", u, r.First)
	}
	for _, c := range []*collector{two, four} {
		c.job.Stop("done", 0)
		c.wait(t)
	}
}

func TestOneJobUIDRunsOneJobAtATime(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(3, 1)
	p := newProcessWith(t, ProcessConfig{Root: reachableRoot(t), UIDs: r})
	spec := func(id string) JobSpec {
		return JobSpec{ID: id, Services: []ServiceSpec{{Name: "s", Command: []string{"sleep", "100"}}}}
	}
	first := start(t, p, spec("job_first"))
	first.waitFor(t, "RUNNING", isState("s", Running))
	_, err := p.Start(context.Background(), spec("job_second"))
	want := fmt.Sprintf("start job job_second: no free job uid: all 1 uids of %d-%d belong to running jobs", r.First, r.First)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("second job: %v\nwant %s…", err, want)
	}
	first.job.Stop("done", 0)
	first.wait(t)
	again := start(t, p, spec("job_second"))
	again.waitFor(t, "RUNNING", isState("s", Running))
	again.job.Stop("done", 0)
	again.wait(t)
}

// Without a supervisor, a process that leaves its service's process group
// outlives the service; with a uid per job it does not outlive the
// cleaning of the job's uid, which runs in the background soon after the
// job ended and at the latest when the runtime closes, nor do its files in
// /tmp.
func TestJobUIDLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(4, 1)
	p, err := NewProcess(ProcessConfig{Root: reachableRoot(t), UIDs: r, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(os.TempDir(), fmt.Sprintf("levers9-left-%d", time.Now().UnixNano()))
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	c := start(t, p, JobSpec{ID: "job_escape", Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c",
		`mkdir ` + tmp + ` && echo left > ` + tmp + `/file; setsid sh -c 'echo escaped $$; exec sleep 100' & sleep 0.5`}}}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	pid, err := strconv.Atoi(lineAfter(t, c, "s", "escaped "))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	gone(t, pid)
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Errorf("the job's folder in /tmp is left: %v", err)
	}
}

// An agent that dies takes its jobs' uids with it: a new runtime on its
// root stops what is left and hands the uid out again.
func TestJobUIDFreeAfterTheAgentDied(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(5, 1)
	root := reachableRoot(t)
	a := startAgent(t, root, 0, r.String())
	for name, pid := range a.pids {
		uids, ok := procUIDs(strconv.Itoa(pid))
		if !ok || uids[0] != r.First {
			t.Errorf("%s (%d) runs as %v, want uid %d", name, pid, uids, r.First)
		}
	}
	a.kill(t)
	p := newProcessWith(t, ProcessConfig{Root: root, UIDs: r})
	for _, pid := range a.pids {
		gone(t, pid)
	}
	c := start(t, p, JobSpec{ID: "job_next", Services: []ServiceSpec{{Name: "s", Command: []string{"id", "-u"}}}})
	res, evs := c.wait(t)
	if out := logs(evs, "s", Stdout); res.Status != Complete || len(out) != 1 || out[0] != strconv.Itoa(int(r.First)) {
		t.Errorf("the next job: %+v, printed %q\n%s", res, out, dump(evs))
	}
}

func TestJobUIDsMustBeUsable(t *testing.T) {
	t.Parallel()
	bad := map[string]ProcessConfig{
		"both":     {User: "nobody", UIDs: testUIDs(6, 1)},
		"root":     {UIDs: UIDRange{First: 0, Count: 10}},
		"past":     {UIDs: UIDRange{First: 4294967290, Count: 6}},
		"a user's": {UIDs: UIDRange{First: 1, Count: 1}}, // daemon, bin, …
		"no root":  {UIDs: testUIDs(6, 1)},
	}
	if os.Geteuid() == 0 {
		delete(bad, "no root")
	}
	if acct, err := user.LookupId("1"); err != nil || acct.Username == "" {
		delete(bad, "a user's")
	}
	for name, cfg := range bad {
		cfg.Root = t.TempDir()
		if _, err := NewProcess(cfg); err == nil {
			t.Errorf("%s: accepted %+v", name, cfg)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	for _, s := range []string{"", "1", "a:b", "0:5", "5:0", "4294967295:1", "-1:4"} {
		if r, err := ParseUIDRange(s); err == nil {
			t.Errorf("ParseUIDRange(%q) = %v", s, r)
		}
	}
	if r, err := ParseUIDRange("1900000000:65536"); err != nil || r != (UIDRange{1_900_000_000, 65536}) || r.Last() != 1_900_065_535 {
		t.Errorf("ParseUIDRange: %v, %v", r, err)
	}
}

// A uid given back is cleaned in the background, and handed out again
// only after that: the next job of the uid finds no process and no file
// of the one before, however late the cleaning runs.
func TestReleasedUIDIsNotReusedBeforeItsCleaning(t *testing.T) {
	t.Parallel()
	needRoot(t)
	r := testUIDs(8, 1) // a range no other test uses: tests run in parallel
	// No supervisor: a process that leaves its group outlives the job. (A
	// zombie is gone: it holds nothing.)
	p, err := NewProcess(ProcessConfig{Root: reachableRoot(t), UIDs: r, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	var batches atomic.Int32
	p.uids.mu.Lock()
	p.uids.beforeBatch = func() {
		batches.Add(1)
		time.Sleep(300 * time.Millisecond) // a slow cleaning
	}
	p.uids.mu.Unlock()
	tmp := filepath.Join(os.TempDir(), fmt.Sprintf("levers9-reuse-%d", time.Now().UnixNano()))
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	first := start(t, p, JobSpec{ID: "job_first", Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c",
		`echo left > ` + tmp + `; setsid sh -c 'echo escaped $$; exec sleep 100 >/dev/null 2>&1' & sleep 0.5`}}}})
	if res, evs := first.wait(t); res.Status != Complete {
		t.Fatalf("job_first: %+v\n%s", res, dump(evs))
	}
	pid := lineAfter(t, first, "s", "escaped ")
	before := batches.Load()
	next := start(t, p, JobSpec{ID: "job_next", Services: []ServiceSpec{{Name: "s", Command: []string{"sh", "-c",
		`id -u; case "$(cut -d' ' -f3 /proc/` + pid + `/stat 2>/dev/null)" in ""|Z|X) echo gone;; *) echo alive;; esac
test -e ` + tmp + ` && echo file || echo nofile`}}}})
	res, evs := next.wait(t)
	want := []string{strconv.Itoa(int(r.First)), "gone", "nofile"}
	if out := logs(evs, "s", Stdout); res.Status != Complete || strings.Join(out, " ") != strings.Join(want, " ") {
		t.Errorf("the next job of the uid: %+v, printed %q, want %q\n%s", res, out, want, dump(evs))
	}
	if batches.Load() == before {
		t.Errorf("the uid was handed out again without a cleaning")
	}
	n, _ := strconv.Atoi(pid)
	gone(t, n)
}

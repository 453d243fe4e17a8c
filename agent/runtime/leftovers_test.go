package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/levers9/levers9/agent/supervise"
)

// sleeping starts a process in a group of its own, reaped when it ends.
func sleeping(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }() // reaped, so gone sees it end
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-waited })
	return cmd
}

// workdir makes job's working directory in root, with a file.
func workdir(t *testing.T, root, job string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, job, "main"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, job, "main", "out"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cleared checks that root holds the records of a runtime alone, naming
// no job.
func cleared(t *testing.T, root string) {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != recordsName || ents[0].IsDir() {
		t.Errorf("left in the root: %v", ents)
	}
	b, err := os.ReadFile(filepath.Join(root, recordsName))
	if err != nil {
		t.Fatal(err)
	}
	if jobs := readRecords(b); len(jobs) > 0 {
		t.Errorf("records name %v", jobs)
	}
}

// A new runtime reads the records an earlier one left: it kills the
// services still running as recorded, spares a process whose pid a record
// names but which started at another time, and deletes the jobs' working
// directories, a job whose services never started included.
func TestNewRuntimeClearsLeftoverRecords(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rec, err := openRecords(filepath.Join(root, recordsName))
	if err != nil {
		t.Fatal(err)
	}
	current, stranger := sleeping(t), sleeping(t)
	take := func(job string) int {
		slot, err := rec.take(job)
		if err != nil {
			t.Fatal(err)
		}
		return slot
	}
	workdir(t, root, "current")
	slot := take("current")
	if err := rec.service(slot, 1, "main", current.Process.Pid, supervise.ProcessStart(current.Process.Pid), current.Process.Pid); err != nil {
		t.Fatal(err)
	}
	workdir(t, root, "unstarted")
	take("unstarted")
	slot = take("stale")
	if err := rec.service(slot, 0, "main", stranger.Process.Pid, supervise.ProcessStart(stranger.Process.Pid)+1, stranger.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := rec.close(); err != nil {
		t.Fatal(err)
	}

	newProcessWith(t, ProcessConfig{Root: root})
	gone(t, current.Process.Pid)
	if !alive(stranger.Process.Pid) {
		t.Error("a process a stale record names (another start time) was killed")
	}
	cleared(t, root)
}

// Agents before the records kept a folder per job in .running, a pid file
// per service: a new runtime reads them too.
func TestNewRuntimeClearsAnOlderAgentsLeftovers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	older := sleeping(t)
	workdir(t, root, "older")
	if err := os.MkdirAll(filepath.Join(root, recordsName, "older"), 0o700); err != nil {
		t.Fatal(err)
	}
	pid := older.Process.Pid
	line := fmt.Sprintf("%d %d %d\n", pid, supervise.ProcessStart(pid), pid)
	if err := os.WriteFile(filepath.Join(root, recordsName, "older", "main"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	newProcessWith(t, ProcessConfig{Root: root})
	gone(t, pid)
	cleared(t, root)
}

// Slots are reused, and a reused slot names none of its last job's
// services.
func TestRecordsReuseSlots(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), recordsName)
	rec, err := openRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.close()
	a, _ := rec.take("a")
	b, _ := rec.take("b")
	if a != 0 || b != 1 {
		t.Fatalf("slots %d, %d; want 0, 1", a, b)
	}
	if err := rec.service(a, 3, "web", 1234, 99, 1234); err != nil {
		t.Fatal(err)
	}
	if err := rec.release(a, 4); err != nil {
		t.Fatal(err)
	}
	if c, _ := rec.take("c"); c != 0 {
		t.Fatalf("slot %d; want the freed 0", c)
	}
	if err := rec.service(b, 0, "main", 5678, 42, 5679); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(readRecords(raw))
	if want := "[{c []} {b [{main 5678 5679 42}]}]"; got != want {
		t.Errorf("records %s; want %s", got, want)
	}
}

// While a job runs, the records name it and its running services' own
// supervisors; once it ended, nothing.
func TestRecordsFollowAJob(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := newProcessWith(t, ProcessConfig{Root: root})
	c := start(t, p, JobSpec{ID: "job_rec", Services: []ServiceSpec{
		{Name: "a", Command: []string{"sleep", "100"}},
		{Name: "b", Command: []string{"sleep", "100"}},
	}})
	c.waitFor(t, "a running", isState("a", Running))
	c.waitFor(t, "b running", isState("b", Running))
	b, err := os.ReadFile(filepath.Join(root, recordsName))
	if err != nil {
		t.Fatal(err)
	}
	jobs := readRecords(b)
	if len(jobs) != 1 || jobs[0].id != "job_rec" || len(jobs[0].services) != 2 {
		t.Fatalf("records %v; want job_rec with a and b", jobs)
	}
	for _, s := range jobs[0].services {
		if s.started == 0 || supervise.ProcessStart(s.pid) != s.started {
			t.Errorf("record %v names no running process", s)
		}
	}
	c.job.Stop("done", 0)
	c.wait(t)
	cleared(t, root)
}

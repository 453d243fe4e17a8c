package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/levers9/levers9/agent/supervise"
)

// A new runtime reads what an earlier one left in .running, in this
// layout (a marker per job, a record per service) and in the older one (a
// folder per job): it kills the services still running as recorded,
// spares a process whose pid a record names but which started at another
// time, and deletes the jobs' working directories, a job whose services
// never started included.
func TestNewRuntimeClearsLeftoverFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	running := filepath.Join(root, runningDir)
	sleeper := func() *exec.Cmd {
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
	record := func(file string, cmd *exec.Cmd, started uint64) {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := writePidFile(file, cmd.Process.Pid, started, cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	workdir := func(job string) {
		if err := os.MkdirAll(filepath.Join(root, job, "main"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, job, "main", "out"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(job string) {
		if err := os.MkdirAll(running, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(running, job), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	current, older, stranger := sleeper(), sleeper(), sleeper()
	marker("current")
	workdir("current")
	record(filepath.Join(running, "current.main"), current, supervise.ProcessStart(current.Process.Pid))
	workdir("older")
	record(filepath.Join(running, "older", "main"), older, supervise.ProcessStart(older.Process.Pid))
	marker("unstarted")
	workdir("unstarted")
	marker("stale")
	record(filepath.Join(running, "stale.main"), stranger, supervise.ProcessStart(stranger.Process.Pid)+1)

	newProcessWith(t, ProcessConfig{Root: root})
	gone(t, current.Process.Pid)
	gone(t, older.Process.Pid)
	if !alive(stranger.Process.Pid) {
		t.Error("a process a stale record names (another start time) was killed")
	}
	var left []string
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		left = append(left, e.Name())
	}
	ents, _ = os.ReadDir(running)
	for _, e := range ents {
		left = append(left, runningDir+"/"+e.Name())
	}
	if !slices.Equal(left, []string{runningDir}) {
		t.Errorf("left in the root: %v", left)
	}
}

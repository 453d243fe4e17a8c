package runtime

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/supervise"
)

// treeScript starts every kind of process that could outlive its service:
// a background child, an orphan (its parent exits), and one in a session
// of its own; each prints its pid.
const treeScript = `sleep 1000 & echo child $!
(sleep 1000 & echo orphan $!)
setsid sh -c 'echo setsid $$; exec sleep 1000' &
exec sleep 1000`

// runAgent is an agent-like parent (helper mode "agent" ROOT MEMORY_MIB
// [UIDS]): it runs treeScript as job_tree on a supervised runtime rooted
// at ROOT (with job uids UIDS, FIRST:COUNT) and prints "main PID" and the
// script's lines, then waits to be killed.
func runAgent(args []string) int {
	mem, _ := strconv.ParseInt(args[1], 10, 64)
	exe, _ := os.Executable()
	cfg := ProcessConfig{Root: args[0], Supervisor: []string{exe, supervise.Arg}}
	if len(args) > 2 {
		var err error
		if cfg.UIDs, err = ParseUIDRange(args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	p, err := NewProcess(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	job, err := p.Start(context.Background(), JobSpec{ID: "job_tree", Services: []ServiceSpec{
		{Name: "tree", Command: []string{"sh", "-c", treeScript}, MemoryMiB: mem},
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for ev := range job.Events() {
		switch e := ev.(type) {
		case StateEvent:
			if e.State == Running {
				fmt.Println("main", e.PID)
			}
		case LogEvent:
			fmt.Println(e.Text)
		}
	}
	return 0
}

// agentProcess is a running runAgent and the pids it reported.
type agentProcess struct {
	cmd  *exec.Cmd
	root string
	pids map[string]int // main, child, orphan, setsid
}

// startAgent starts runAgent with args ROOT MEMORY_MIB [UIDS] and waits
// for the pids of its service.
func startAgent(t *testing.T, root string, memoryMiB int64, uids ...string) *agentProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{root, strconv.FormatInt(memoryMiB, 10)}, uids...)...)
	cmd.Env = append(os.Environ(), helperVar+"=agent")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentProcess{cmd: cmd, root: root, pids: map[string]int{}}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// Whatever a failed test left: a runtime on the root stops it.
		if p, err := NewProcess(ProcessConfig{Root: root, Supervisor: supervisorArgv(t)}); err == nil {
			_ = p.Close()
		}
		for _, pid := range a.pids {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(hang)
	for len(a.pids) < 4 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the agent ended early; pids %v", a.pids)
			}
			if name, pid, ok := strings.Cut(line, " "); ok {
				n, err := strconv.Atoi(pid)
				if err != nil {
					t.Fatalf("line %q", line)
				}
				a.pids[name] = n
			}
		case <-timeout:
			t.Fatalf("no pids after %s: %v", hang, a.pids)
		}
	}
	go func() {
		for range lines { // keep the pipe open and drained
		}
	}()
	return a
}

// supervisorPid is the supervisor the runtime recorded for job_tree.
func (a *agentProcess) supervisorPid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.root, recordsName))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range readRecords(b) {
		for _, s := range j.services {
			if j.id == "job_tree" && s.name == "tree" && s.started != 0 {
				return s.pid
			}
		}
	}
	t.Fatalf("no record of the supervisor")
	return 0
}

func (a *agentProcess) kill(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
}

func alive(pid int) bool {
	st, ok := supervise.ReadProcStat(pid)
	return ok && st.State != 'Z'
}

func TestServicesDieWithTheAgent(t *testing.T) {
	t.Parallel()
	a := startAgent(t, t.TempDir(), 0)
	sup := a.supervisorPid(t)
	for name, pid := range a.pids {
		if !alive(pid) {
			t.Fatalf("%s (%d) is not running before the agent is killed", name, pid)
		}
	}
	cgroups := detectCgroups(a.root)
	// Every process the agent started, the supervisor waiting for a task
	// among them.
	all := supervise.Descendants(a.cmd.Process.Pid)
	a.kill(t)
	for _, pid := range a.pids {
		gone(t, pid)
	}
	gone(t, sup)
	for _, pid := range all {
		gone(t, pid)
	}
	// The supervisor removed the service's cgroups, as the agent would.
	for _, h := range cgroups.hier {
		if _, err := os.Stat(h.base); !os.IsNotExist(err) {
			t.Errorf("cgroup %s is left: %v", h.base, err)
		}
	}
}

func TestNewRuntimeStopsLeftovers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := startAgent(t, root, 0)
	// A supervisor that does nothing about its service, as if hung. (Its
	// agent stays alive: when the agent dies, the kernel continues the
	// stopped supervisor, whose process group is then orphaned, with
	// SIGHUP and SIGCONT, and it cleans up itself.)
	sup := a.supervisorPid(t)
	if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(hang); ; time.Sleep(time.Millisecond) {
		if st, _ := supervise.ReadProcStat(sup); st.State == 'T' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not stop")
		}
	}
	if _, err := os.Stat(filepath.Join(root, "job_tree", "tree")); err != nil {
		t.Fatalf("the working directory: %v", err)
	}
	newProcessWith(t, ProcessConfig{Root: root})
	for _, pid := range a.pids {
		gone(t, pid)
	}
	gone(t, sup)
	cleared(t, root)
}

// With cgroups, even processes whose supervisor was killed too (and which
// escaped to init) are found by the next runtime.
func TestNewRuntimeStopsLeftoversInCgroups(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if !detectCgroups(root).enforces("memory") {
		t.Skip("no writable memory cgroup here (not root?): covered by the notice test")
	}
	a := startAgent(t, root, 64)
	sup := a.supervisorPid(t)
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone(t, sup)
	a.kill(t)
	if !alive(a.pids["child"]) {
		t.Fatal("the background child died with its supervisor: nothing for the next runtime to do")
	}
	p := newProcessWith(t, ProcessConfig{Root: root})
	for _, pid := range a.pids {
		gone(t, pid)
	}
	for _, h := range p.cgroups.hier {
		if _, err := os.Stat(h.base); !os.IsNotExist(err) {
			t.Errorf("cgroup %s is left: %v", h.base, err)
		}
	}
}

// A mount is a link in the working directory: deleting the directory
// leaves the mounted folder alone.
func TestWorkingDirectoryDeletedNotItsMounts(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	bucket := t.TempDir()
	c := start(t, p, JobSpec{ID: "job_mount", Mounts: []Mount{{Path: "/data/out", Dir: bucket}}, Services: []ServiceSpec{
		{Name: "w", Command: []string{"sh", "-c", "echo kept > data/out/result; echo temp > scratch"}},
	}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	if _, err := os.Lstat(filepath.Join(p.cfg.Root, "job_mount")); !os.IsNotExist(err) {
		t.Errorf("the working directory is left: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(bucket, "result")); err != nil || string(b) != "kept\n" {
		t.Errorf("the mounted folder lost its file: %q, %v", b, err)
	}
}

const testJobUser = "levers9-test-job"

func TestRunsAsTheJobUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("running services as another user needs root; this test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
	if _, err := lookupUser(testJobUser); err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testJobUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v: %s", err, out)
		}
	}
	u, err := lookupUser(testJobUser)
	if err != nil {
		t.Fatal(err)
	}
	// A root others may pass through, as an agent's would be; beside it a
	// secret of the agent's.
	top, err := os.MkdirTemp("", "levers9-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o711); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(top, "node.json")
	if err := os.WriteFile(secret, []byte("credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Mounted folders in a place the job user may not enter (like the
	// agent's state directory), with a file only root may read.
	private := t.TempDir()
	in, outDir := filepath.Join(private, "in"), filepath.Join(private, "out")
	for _, d := range []string{in, outDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(in, "input.txt"), []byte("input"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newProcessWith(t, ProcessConfig{Root: filepath.Join(top, "jobs"), User: testJobUser})
	c := start(t, p, JobSpec{ID: "job_user", Mounts: []Mount{{Path: "/data/in", Dir: in, ReadOnly: true}, {Path: "/data/out", Dir: outDir}}, Services: []ServiceSpec{
		{Name: "who", Command: []string{"sh", "-c", `id -u; id -G; stat -c '%u %a' .; echo "HOME=$HOME"
cat ../../../node.json || echo no-secret
ls ../.. || echo no-listing
ls .. || echo no-job-listing
cat data/in/input.txt; echo
echo changed > data/in/input.txt || echo read-only
cat data/in/input.txt > data/out/copy.txt`}},
	}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	out := logs(evs, "who", Stdout)
	dir := filepath.Join(p.cfg.Root, "job_user", "who")
	want := []string{
		strconv.Itoa(int(u.uid)),
		strconv.Itoa(int(u.gid)), // the supplementary groups are cleared
		fmt.Sprintf("%d 700", u.uid),
		"HOME=" + dir,
		"no-secret", "no-listing", "no-job-listing",
		"input", "read-only",
	}
	if strings.Join(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("the service printed\n%s\nwant\n%s\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"), dump(evs))
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "copy.txt")); err != nil || string(b) != "input" {
		t.Errorf("the writable mount got %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(in, "input.txt")); err != nil || string(b) != "input" {
		t.Errorf("the read-only mount's file is %q, %v", b, err)
	}
	if st, err := os.Stat(p.cfg.Root); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("root %v, %v: want mode 0711", st.Mode(), err)
	}
}

func TestCloseRemovesAnEmptyRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "jobs")
	p := newProcessWith(t, ProcessConfig{Root: root})
	c := start(t, p, JobSpec{ID: "job_close", Services: []ServiceSpec{{Name: "a", Command: []string{"sleep", "100"}}}})
	c.waitFor(t, "RUNNING", isState("a", Running))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "job_close", "a")); err != nil {
		t.Fatalf("Close with a job running: %v", err)
	}
	c.job.Stop("done", 0)
	c.wait(t)
	// The cgroups' folder outlives the services (the next one's cgroups
	// are made in it), not the runtime.
	for _, h := range p.cgroups.hier {
		if _, err := os.Stat(h.base); err != nil {
			t.Errorf("cgroup folder %s is gone while the runtime lives: %v", h.base, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the root is left after Close: %v", err)
	}
	for _, h := range p.cgroups.hier {
		if _, err := os.Stat(h.base); !os.IsNotExist(err) {
			t.Errorf("cgroup folder %s is left after Close: %v", h.base, err)
		}
	}
}

func TestJobUserMustBeUsable(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"0", "root", "levers9-no-such-user"} {
		if _, err := NewProcess(ProcessConfig{Root: t.TempDir(), User: user}); err == nil {
			t.Errorf("user %q accepted", user)
		}
	}
}

func TestCgroupLimits(t *testing.T) {
	t.Parallel()
	p := newProcessWith(t, ProcessConfig{Root: t.TempDir(), PidsLimit: 321})
	svc := ServiceSpec{Name: "limited", Command: []string{"sh", "-c", "cat /proc/self/cgroup; sleep 100"}, CPU: 0.5, MemoryMiB: 64}
	c := start(t, p, JobSpec{ID: "job_limits", Services: []ServiceSpec{svc}})
	if !p.cgroups.enforces("cpu") || !p.cgroups.enforces("memory") {
		// Where limits cannot be enforced the service is told so first.
		line := c.waitFor(t, "the notice", func(ev Event) bool { _, ok := ev.(LogEvent); return ok }).(LogEvent)
		if line.Stream != Stderr || !strings.HasPrefix(line.Text, "levers9: this node's process runtime does not enforce") {
			t.Fatalf("first line %+v", line)
		}
		c.job.Stop("done", 0)
		c.wait(t)
		return
	}
	if p.cgroups.v2 {
		t.Skip("cgroup v2: the files checked here are v1's")
	}
	paths := map[string]string{}
	for len(paths) < 3 {
		c.waitFor(t, "the cgroups", func(ev Event) bool {
			l, ok := ev.(LogEvent)
			if !ok {
				return false
			}
			parts := strings.SplitN(l.Text, ":", 3)
			if len(parts) == 3 {
				for _, ctl := range strings.Split(parts[1], ",") {
					paths[ctl] = parts[2]
				}
			}
			return paths["cpu"] != "" && paths["memory"] != "" && paths["pids"] != ""
		})
	}
	for _, f := range []struct{ ctl, file, want string }{
		{"cpu", "cpu.cfs_quota_us", "50000"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"memory", "memory.limit_in_bytes", strconv.Itoa(64 << 20)},
		{"pids", "pids.max", "321"},
	} {
		file := filepath.Join(cgroupFS, f.ctl, paths[f.ctl], f.file)
		b, err := os.ReadFile(file)
		if err != nil || strings.TrimSpace(string(b)) != f.want {
			t.Errorf("%s = %q (%v), want %s", file, b, err, f.want)
		}
	}
	c.job.Stop("done", 0)
	c.wait(t)
	for ctl, path := range paths {
		if ctl != "cpu" && ctl != "memory" && ctl != "pids" {
			continue
		}
		if _, err := os.Stat(filepath.Join(cgroupFS, ctl, path)); !os.IsNotExist(err) {
			t.Errorf("the service's %s cgroup is left: %v", ctl, err)
		}
	}
}

func TestOutOfMemory(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	if !p.cgroups.enforces("memory") {
		t.Skip("no writable memory cgroup here (not root?): the notice test covers this node")
	}
	hog := helperService(t, "hog", "hog", "512")
	hog.MemoryMiB = 48
	c := start(t, p, JobSpec{ID: "job_oom", Services: []ServiceSpec{hog}})
	res, evs := c.wait(t)
	s := serviceResult(t, res, "hog")
	if s.State != Failed || s.Reason != "out of memory (limit 48 MiB)" || s.ExitCode == nil || *s.ExitCode != 137 {
		t.Errorf("hog %+v (exit code %v)\n%s", s, deref(s.ExitCode), dump(evs))
	}
	if res.Reason != "service hog failed: out of memory (limit 48 MiB)" {
		t.Errorf("job reason %q", res.Reason)
	}
}

func TestOutOfMemoryText(t *testing.T) {
	t.Parallel()
	for mib, want := range map[int64]string{
		0: "out of memory", 512: "out of memory (limit 512 MiB)", 8192: "out of memory (limit 8 GiB)",
		1536: "out of memory (limit 1.5 GiB)", 1000: "out of memory (limit 1000 MiB)",
	} {
		if got := OutOfMemory(mib); got != want {
			t.Errorf("OutOfMemory(%d) = %q, want %q", mib, got, want)
		}
	}
}

// The command inherits none of the supervisor's pipes or sockets to the
// agent: a job that could write to the status pipe could report a pid or
// an exit of its choosing, and one holding the control socket could send
// the supervisor (root) tasks. Its only pipes are its stdout and stderr.
func TestCommandGetsNoSupervisorPipes(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	c := start(t, p, JobSpec{ID: "job_fds", Services: []ServiceSpec{
		{Name: "s", Command: []string{"sh", "-c", `for f in /proc/self/fd/*; do echo "$f $(readlink $f)"; done`}},
	}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	var pipes []string
	for _, ev := range evs {
		// A cgroup file the supervisor opened would let the job move its
		// processes out of its limits.
		if l, ok := ev.(LogEvent); ok && l.Stream == Stdout && (strings.Contains(l.Text, "pipe:") || strings.Contains(l.Text, "socket:") || strings.Contains(l.Text, " "+cgroupFS)) {
			pipes = append(pipes, l.Text)
		}
	}
	// Pipes the test binary inherited itself (from whatever runs go test)
	// reach every child alike; only the supervisor's would be a leak.
	inherited := map[string]bool{}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
				inherited[target] = true
			}
		}
	}
	for _, p := range pipes {
		_, target, _ := strings.Cut(p, " ")
		if inherited[target] {
			continue
		}
		if !strings.HasPrefix(p, "/proc/self/fd/1 ") && !strings.HasPrefix(p, "/proc/self/fd/2 ") {
			t.Errorf("the command holds a pipe, socket or cgroup file besides its output: %q (all: %q)", p, pipes)
		}
	}
}

// The supervisor, which runs as root where jobs get uids of their own,
// never starts with the job's environment (LD_PRELOAD would run the job's
// code in it); the command gets it.
func TestSupervisorStartsWithoutTheJobsEnvironment(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	c := start(t, p, JobSpec{ID: "job_env", Services: []ServiceSpec{
		{Name: "s", Command: []string{"sh", "-c", `echo "mine=$PROBE"; tr '\0' '\n' < /proc/$PPID/environ | grep -c '^PROBE=' || true`},
			Env: []EnvVar{{Name: "PROBE", Value: "set"}}},
	}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	var out []string
	for _, ev := range evs {
		if l, ok := ev.(LogEvent); ok && l.Stream == Stdout {
			out = append(out, l.Text)
		}
	}
	if strings.Join(out, "|") != "mine=set|0" {
		t.Fatalf("output %q; want the command to see PROBE and its supervisor not", out)
	}
}

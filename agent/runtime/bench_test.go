package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/levers9/levers9/agent/supervise"
)

// BenchmarkTrivialJobs starts 1,000 jobs (per iteration: make bench runs
// one) of one `true` service one after another and waits for each to end,
// as the built-in node runs them in CI: supervised, a uid per job (as
// root), cgroups where the agent may create them. It reports per job the
// agent's CPU, its services' (supervisors and commands) and the bytes the
// agent allocated. Beside it, the same-run baseline: `true` started by
// exec.Command in a loop, the floor of starting a program. Profile it:
//
//	go test ./agent/runtime -run '^$' -bench TrivialJobs -benchtime 2x -cpuprofile cpu.out
//	go tool pprof -top -cum cpu.out
func BenchmarkTrivialJobs(b *testing.B) {
	p := benchProcess(b)
	defer p.Close()
	run := func(i int) {
		if err := runTrivialJob(p, i); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 5 { // warm up
		run(-1 - i)
	}
	jobs := 1000 * b.N
	perJob := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(jobs) }
	b.ResetTimer()
	var mem0, mem1 goruntime.MemStats
	goruntime.ReadMemStats(&mem0)
	sup0 := supervisorsCPU(p)
	start, cpu, children := time.Now(), cpuTime(), childrenCPUTime()
	for i := range jobs {
		run(i)
	}
	elapsed := time.Since(start)
	goruntime.ReadMemStats(&mem1)
	b.StopTimer()
	var supervisors time.Duration
	for pid, d := range supervisorsCPU(p) {
		supervisors += d - sup0[pid]
	}
	// The cleanings of the last uids count too; and the supervisors,
	// which run services in turn, are reaped only when they are stopped:
	// their CPU and their commands' counts from then.
	_ = p.Close()
	servicesCPU := childrenCPUTime() - children
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(perJob(cpuTime()-cpu), "agent-cpu-ms/job")
	b.ReportMetric(perJob(servicesCPU), "services-cpu-ms/job")
	b.ReportMetric(perJob(supervisors), "supervisors-own-cpu-ms/job")
	b.ReportMetric(float64(mem1.TotalAlloc-mem0.TotalAlloc)/1000/float64(jobs), "agent-alloc-KB/job")
	base, cpu, children := time.Now(), cpuTime(), childrenCPUTime()
	for range jobs {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(jobs)/time.Since(base).Seconds(), "baseline-true/s")
	b.ReportMetric(perJob(cpuTime()-cpu), "baseline-cpu-ms/true")
	b.ReportMetric(perJob(childrenCPUTime()-children), "baseline-child-cpu-ms/true")
}

// BenchmarkParallelTrivialJobs is a node's ceiling for trivial jobs: 1,000
// jobs (per iteration) of one `true` service, as many at a time as the
// machine has cores, through the process runtime alone, isolated as
// BenchmarkTrivialJobs' are, with no server, database or network. Whatever
// drives a node, it runs no more trivial jobs a second than this. It
// reports jobs a second, the whole machine's busy CPU per job (every
// process and the kernel's own work, such as removing cgroups: the cores'
// 1,000 ms a second over it bound the rate) and, of it, the agent's and its
// services' (supervisors and `true`). Beside it, the same-run baseline:
// `true` started by exec.Command as many at a time, the machine's ceiling
// for starting a program. More at a time only contend (on 2 cores, 16 at a
// time ran 235 jobs a second where 2 ran 300).
func BenchmarkParallelTrivialJobs(b *testing.B) {
	parallel := goruntime.NumCPU()
	p := benchProcess(b)
	defer p.Close()
	jobs := 1000 * b.N
	perJob := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(jobs) }
	// The warm-up fills the pool of supervisors.
	if err := inParallel(parallel, parallel, func(i int) error { return runTrivialJob(p, -1-i) }); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start, machine, cpu, children := time.Now(), machineBusy(b), cpuTime(), childrenCPUTime()
	if err := inParallel(jobs, parallel, func(i int) error { return runTrivialJob(p, i) }); err != nil {
		b.Fatal(err)
	}
	elapsed, machineUsed, agent := time.Since(start), machineBusy(b)-machine, cpuTime()-cpu
	b.StopTimer()
	_ = p.Close() // reaps the supervisors: their CPU and their commands' count from then
	services := childrenCPUTime() - children
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(perJob(machineUsed), "machine-cpu-ms/job")
	b.ReportMetric(perJob(agent), "agent-cpu-ms/job")
	b.ReportMetric(perJob(services), "services-cpu-ms/job")

	start, machine = time.Now(), machineBusy(b)
	if err := inParallel(jobs, parallel, func(int) error { return exec.Command("true").Run() }); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(jobs)/time.Since(start).Seconds(), "baseline-true/s")
	b.ReportMetric(perJob(machineBusy(b)-machine), "baseline-machine-cpu-ms/true")
}

// benchProcess is the process runtime the benchmarks run jobs on: the
// production supervisor and, as root, a uid per job.
func benchProcess(b *testing.B) *Process {
	cfg := ProcessConfig{Root: b.TempDir() + "/jobs", Supervisor: benchSupervisor(b)}
	if isRoot() {
		cfg.UIDs = testUIDs(90, 256)
		cfg.Root = benchReachableRoot(b)
	}
	p, err := NewProcess(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// runTrivialJob runs job i, one `true` service, on p to its end.
func runTrivialJob(p *Process, i int) error {
	spec := JobSpec{ID: fmt.Sprintf("job_%d", i), Services: []ServiceSpec{{Name: "s", Command: []string{"true"}}}}
	j, err := p.Start(context.Background(), spec)
	if err != nil {
		return err
	}
	for range j.Events() {
	}
	if res := j.Wait(); res.Status != Complete {
		return fmt.Errorf("job %d: %+v", i, res)
	}
	return nil
}

// inParallel calls f(0) … f(n-1), workers at a time, and returns the first
// error; after one, no new call starts.
func inParallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var g errgroup.Group
	for range workers {
		g.Go(func() error {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					next.Store(int64(n))
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// machineBusy is the busy time of every CPU of the machine so far, from
// /proc/stat (user, nice, system, irq, softirq and steal; not idle or
// iowait).
func machineBusy(b *testing.B) time.Duration {
	b.Helper()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		b.Fatalf("unexpected /proc/stat: %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		t, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatalf("unexpected /proc/stat: %q", line)
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// supervisorsCPU is the CPU of each waiting supervisor's own (by pid), not
// its commands'. Jobs run one after another reuse the same few: none
// stops, and the waiting ones are all that ran the jobs.
func supervisorsCPU(p *Process) map[int]time.Duration {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	cpu := map[int]time.Duration{}
	for range len(p.idle) {
		sv := <-p.idle
		pid := sv.cmd.Process.Pid
		if st, ok := supervise.ReadProcStat(pid); ok {
			cpu[pid] = st.CPU
		}
		p.idle <- sv
	}
	return cpu
}

// cpuTime is the CPU this process (the agent) used so far, not its
// children (supervisors, services).
func cpuTime() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// childrenCPUTime is the CPU of the children this process waited for,
// with theirs: the supervisors and their services' commands.
func childrenCPUTime() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func isRoot() bool { return os.Geteuid() == 0 }

// benchSupervisor is the supervisor production runs, cmd/levers9-supervise
// built for the benchmark: its start is part of every job's cost, and
// this test binary, with everything the tests import, starts slower.
func benchSupervisor(b *testing.B) []string {
	out := filepath.Join(b.TempDir(), "levers9-supervise")
	build := exec.Command("go", "build", "-o", out, "github.com/levers9/levers9/cmd/levers9-supervise")
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the supervisor: %v\n%s", err, msg)
	}
	return []string{out}
}

// benchReachableRoot is reachableRoot for a benchmark.
func benchReachableRoot(b *testing.B) string {
	top, err := os.MkdirTemp("", "levers9-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o711); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(top, "jobs")
}

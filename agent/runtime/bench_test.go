package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"

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
	cfg := ProcessConfig{Root: b.TempDir() + "/jobs", Supervisor: benchSupervisor(b)}
	if isRoot() {
		cfg.UIDs = testUIDs(90, 256)
		cfg.Root = benchReachableRoot(b)
	}
	p, err := NewProcess(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	spec := func(i int) JobSpec {
		return JobSpec{ID: fmt.Sprintf("job_%d", i), Services: []ServiceSpec{{Name: "s", Command: []string{"true"}}}}
	}
	run := func(i int) {
		j, err := p.Start(context.Background(), spec(i))
		if err != nil {
			b.Fatal(err)
		}
		for range j.Events() {
		}
		if res := j.Wait(); res.Status != Complete {
			b.Fatalf("job %d: %+v", i, res)
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

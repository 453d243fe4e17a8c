package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/levers9/levers9/internal/dbtest"
)

// twoServiceJob submits a job of two `true` services; callers add the
// selection.
const twoServiceJob = `mutation { submitJob(spec: {queue: "default", services: [{name: "a", command: ["true"], cpu: 0.1, memoryMiB: 16}, {name: "b", command: ["true"], cpu: 0.1, memoryMiB: 16}]})`

// BenchmarkThroughput measures end-to-end throughput on the built-in node
// of the real server binary (process runtime): one client submits 1,000
// trivial jobs one after another over a kept-alive connection, without
// following them, and the figure runs from the first submission to the
// end of the last job; then the same with 200 two-service jobs. Beside it,
// the same-run baseline: the same number of `true` processes started one
// after another by this process (the machine's floor for starting a
// program, without any scheduling, isolation or bookkeeping). It reports
// statements per job too, from the server's
// levers9_database_statements_total (the benchmark's own polling, a count
// every 20 ms, among them), on PostgreSQL commits per job, and the CPU
// milliseconds a job costs during each drain: the whole machine's busy time
// (which bounds jobs a second: cores × 1,000 / that), the server's, and its
// services' (supervisors and commands), beside the CPU one bare `true`
// costs to start from this process. These hold far better than jobs a
// second on a machine whose speed wanders. With
// BENCH_PPROF_ADDR set the server serves its profiler there:
//
//	BENCH_PPROF_ADDR=127.0.0.1:6060 go test ./e2e -run '^$' -bench Throughput/sqlite &
//	go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'
func BenchmarkThroughput(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			metricsToken := newSecret()
			env := []string{"LEVERS9_METRICS_TOKEN=" + metricsToken}
			if addr := os.Getenv("BENCH_PPROF_ADDR"); addr != "" { // profile the server while it runs
				env = append(env, "LEVERS9_PPROF_ADDR="+addr)
			}
			url := dbtest.URL(b, dialect)
			s := startServer(b, b.TempDir(), url, env...)
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			for range 10 { // warm up
				runTrivial(b, s.URL, token)
			}
			statements := func() float64 {
				return value(scrape(b, s.URL+"/metrics", metricsToken), "levers9_database_statements_total", nil)
			}
			pid := s.cmd.Process.Pid
			c0, s0 := commits(b, url), statements()
			u0 := cpuNow(b, pid)
			one, oneIn := drainSequential(b, s.URL, token, trivialJob, 1000)
			u1 := cpuNow(b, pid)
			c1, s1 := commits(b, url), statements()
			u2 := cpuNow(b, pid)
			two, twoIn := drainSequential(b, s.URL, token, twoServiceJob, 200)
			u3 := cpuNow(b, pid)
			c2, s2 := commits(b, url), statements()
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(one, "jobs/s(1000-sequential)")
			b.ReportMetric(two, "jobs/s(200-two-service)")
			b.ReportMetric(oneIn, "submitted/s(1000-sequential)")
			b.ReportMetric(twoIn, "submitted/s(200-two-service)")
			b.ReportMetric((s1-s0)/1000, "statements/job(1000-sequential)")
			b.ReportMetric((s2-s1)/200, "statements/job(200-two-service)")
			if c0 >= 0 {
				b.ReportMetric(float64(c1-c0)/1000, "pg-commits/job(1000-sequential)")
				b.ReportMetric(float64(c2-c1)/200, "pg-commits/job(200-two-service)")
			}
			u1.since(u0).report(b, 1000, "1000-sequential")
			u3.since(u2).report(b, 200, "200-two-service")
			rate, perSpawn := spawnRate(b, 1000)
			b.ReportMetric(rate, "baseline-true-processes/s")
			b.ReportMetric(perSpawn, "baseline-cpu-ms/true-process")
			s.stop()
		})
	}
}

// drainSequential submits jobs jobs one after another from one client,
// waits until none is pending or running, checks that every one
// completed, and returns jobs per second from the first submission to the
// last end, and how many a second were submitted (the client's side of
// that figure). The wait polls the count every 20 ms (the benchmark's own
// clock, off the server's path).
func drainSequential(b *testing.B, base, token, submit string, jobs int) (ended, submitted float64) {
	b.Helper()
	var before struct{ Jobs struct{ TotalCount int } }
	gql(b, base, token, `{ jobs(where: {status: COMPLETE}) { totalCount } }`, nil, &before)
	start := time.Now()
	for range jobs {
		gql(b, base, token, submit+` { id } }`, nil, &map[string]any{})
	}
	submitted = float64(jobs) / time.Since(start).Seconds()
	for {
		var out struct{ Jobs struct{ TotalCount int } }
		gql(b, base, token, `{ jobs(where: {statusIn: [PENDING, RUNNING]}) { totalCount } }`, nil, &out)
		if out.Jobs.TotalCount == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	var after struct{ Jobs struct{ TotalCount int } }
	gql(b, base, token, `{ jobs(where: {status: COMPLETE}) { totalCount } }`, nil, &after)
	if got := after.Jobs.TotalCount - before.Jobs.TotalCount; got != jobs {
		b.Fatalf("%d of %d jobs completed", got, jobs)
	}
	return float64(jobs) / elapsed.Seconds(), submitted
}

// spawnRate starts n `true` processes one after another and returns how
// many a second, and the CPU milliseconds each took (this process's and
// the process's own).
func spawnRate(b *testing.B, n int) (perSecond, cpuMs float64) {
	b.Helper()
	// This process's and the children it waited for: not its living ones
	// (the server).
	own := func() time.Duration {
		_, self, children, ok := procTimes(os.Getpid(), procTicks(b))
		if !ok {
			b.Fatal("reading /proc/self/stat")
		}
		return self + children
	}
	u0 := own()
	start := time.Now()
	for range n {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	return float64(n) / elapsed.Seconds(), float64(own()-u0) / float64(time.Millisecond) / float64(n)
}

// cpuTimes is CPU time spent so far: by the whole machine (every CPU's
// busy time, every process and the kernel), by one process, and by its
// children, living or waited for, with the children they waited for (for
// the server: its services' supervisors and their commands).
type cpuTimes struct{ machine, server, children time.Duration }

// userHZ is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuNow reads the machine's busy time from /proc/stat and process pid's
// and its children's from /proc/PID/stat.
func cpuNow(b *testing.B, pid int) cpuTimes {
	b.Helper()
	ticks := procTicks(b)
	var t cpuTimes
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		b.Fatalf("unexpected /proc/stat: %q", line)
	}
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		t.machine += ticks(f[i])
	}
	_, self, children, ok := procTimes(pid, ticks)
	if !ok {
		b.Fatalf("reading /proc/%d/stat", pid)
	}
	t.server, t.children = self, children
	// Supervisors run services in turn and are reaped only when they end:
	// the living children's CPU, theirs and their reaped children's,
	// counts as well as the dead ones'.
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if ppid, self, children, ok := procTimes(child, ticks); ok && ppid == pid {
			t.children += self + children
		}
	}
	return t
}

// procTicks parses a CPU time of /proc.
func procTicks(b *testing.B) func(string) time.Duration {
	return func(f string) time.Duration {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("reading CPU times: %v", err)
		}
		return time.Duration(n) * time.Second / userHZ
	}
}

// procTimes reads process pid's parent, its CPU time and that of the
// children it waited for from /proc/PID/stat; false when it is gone.
func procTimes(pid int, ticks func(string) time.Duration) (ppid int, self, children time.Duration, ok bool) {
	ps, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	// The fields after the command's name, which may hold spaces: state is
	// field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
	after := strings.Fields(string(ps[bytes.LastIndexByte(ps, ')')+1:]))
	if len(after) < 15 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(after[1])
	return ppid, ticks(after[11]) + ticks(after[12]), ticks(after[13]) + ticks(after[14]), true
}

func (t cpuTimes) since(u cpuTimes) cpuTimes {
	return cpuTimes{t.machine - u.machine, t.server - u.server, t.children - u.children}
}

// report reports t as CPU milliseconds per job of jobs.
func (t cpuTimes) report(b *testing.B, jobs int, what string) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(jobs) }
	b.ReportMetric(ms(t.machine), "machine-cpu-ms/job("+what+")")
	b.ReportMetric(ms(t.server), "server-cpu-ms/job("+what+")")
	b.ReportMetric(ms(t.children), "services-cpu-ms/job("+what+")")
}

// commits returns how many transactions PostgreSQL has committed in the
// database of url (every statement outside a transaction counts as one),
// or -1 on SQLite. It first waits out the statistics collector's flush
// interval (PostgreSQL reports a backend's counts at most once a second),
// so the figure includes everything until now. It includes the
// benchmark's own polling (a few queries each 20 ms).
func commits(b *testing.B, url string) int64 {
	b.Helper()
	if !strings.HasPrefix(url, "postgres") {
		return -1
	}
	time.Sleep(1500 * time.Millisecond)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT pg_stat_clear_snapshot() IS NULL, xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(new(bool), &n); err != nil {
		b.Fatal(err)
	}
	return n
}

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// idleSettle is how long the idle server is left alone before measuring:
// start-up work (migrations, the node's first sync, RunOnStart periodic
// jobs) is over by then.
const idleSettle = 5 * time.Second

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// BenchmarkIdle measures what the real server binary costs doing nothing:
// no jobs, the built-in node connected. After it settles, the CPU time of
// the server's process tree (utime+stime of /proc/PID/stat, its children
// included) over a window of 20 s (BENCH_IDLE_SECONDS), as a percentage of
// one core. The same-run baselines, measured over the same window: a tiny
// Go program that only serves HTTP (the floor of an idle Go server), and
// the server's River client alone on a database of its own of the same
// kind (testdata/idleriver: River's own timers and maintenance, the floor
// under every server built on it). With
// BENCH_PPROF_ADDR set the server serves its profiler there:
//
//	BENCH_PPROF_ADDR=127.0.0.1:6061 go test ./e2e -run '^$' -bench Idle/sqlite &
//	go tool pprof -top 'http://127.0.0.1:6061/debug/pprof/profile?seconds=20'
func BenchmarkIdle(b *testing.B) {
	window := 20 * time.Second
	if s := os.Getenv("BENCH_IDLE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("BENCH_IDLE_SECONDS=%q: %v", s, err)
		}
		window = time.Duration(n) * time.Second
	}
	idleHTTP := buildIdleHTTP(b)
	idleRiver := buildIdleRiver(b)
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			var env []string
			if addr := os.Getenv("BENCH_PPROF_ADDR"); addr != "" {
				env = append(env, "LEVERS9_PPROF_ADDR="+addr)
			}
			s := startServer(b, b.TempDir(), dbtest.URL(b, dialect), env...)
			token := s.credentials().Token
			waitLocalNode(b, s.URL, token)
			base := startIdleHTTP(b, idleHTTP)
			river := startIdleRiver(b, idleRiver, dbtest.URL(b, dialect))
			time.Sleep(idleSettle)

			server, baseline, riverPid := s.cmd.Process.Pid, base.Process.Pid, river.Process.Pid
			s0, b0, r0 := treeTicks(b, server), treeTicks(b, baseline), treeTicks(b, riverPid)
			start := time.Now()
			time.Sleep(window)
			s1, b1, r1 := treeTicks(b, server), treeTicks(b, baseline), treeTicks(b, riverPid)
			elapsed := time.Since(start).Seconds()

			b.ReportMetric(0, "ns/op")
			b.ReportMetric(percentOfCore(s1-s0, elapsed), "%core-idle-server")
			b.ReportMetric(percentOfCore(b1-b0, elapsed), "%core-baseline-idle-http")
			b.ReportMetric(percentOfCore(r1-r0, elapsed), "%core-baseline-idle-river")
			s.stop()
		})
	}
}

func percentOfCore(ticks int64, seconds float64) float64 {
	return 100 * float64(ticks) / clockTicks / seconds
}

// idleHTTPSource is the baseline: a Go program serving HTTP, nothing else.
const idleHTTPSource = `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
}
`

// buildIdleHTTP builds the baseline program and returns its path.
func buildIdleHTTP(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(idleHTTPSource), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "idle-http")
	build := exec.Command("go", "build", "-o", out, src)
	build.Dir = dir
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the idle HTTP baseline: %v\n%s", err, msg)
	}
	return out
}

// startIdleHTTP starts the baseline program, checks that it answers once,
// and stops it when b ends.
func startIdleHTTP(b *testing.B, path string) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var addr string
	if _, err := fmt.Fscanln(stdout, &addr); err != nil {
		b.Fatalf("reading the baseline's address: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	return cmd
}

// buildIdleRiver builds the River baseline (testdata/idleriver) and
// returns its path.
func buildIdleRiver(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "idleriver")
	build := exec.Command("go", "build", "-o", out, "./testdata/idleriver")
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the idle River baseline: %v\n%s", err, msg)
	}
	return out
}

// startIdleRiver starts the River baseline on the database at url, waits
// until it works, and stops it when b ends.
func startIdleRiver(b *testing.B, path, url string) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(path, url)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var ready string
	if _, err := fmt.Fscanln(stdout, &ready); err != nil || ready != "ready" {
		b.Fatalf("the River baseline did not start (%q): %v", ready, err)
	}
	return cmd
}

// treeTicks is the CPU time, in clock ticks, of pid and its descendants:
// its own utime+stime, its waited-for children's (cutime+cstime) and, for
// children still running, theirs.
func treeTicks(b *testing.B, pid int) int64 {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0 // a child that ended between listing and reading
	}
	// The command name (field 2) may hold spaces: fields count after ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var total int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime (fields 14–17)
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat field %d: %v", pid, i+3, err)
		}
		total += n
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		children, _ := os.ReadFile(t)
		for _, c := range strings.Fields(string(children)) {
			if child, err := strconv.Atoi(c); err == nil {
				total += treeTicks(b, child)
			}
		}
	}
	return total
}

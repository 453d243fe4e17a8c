package joblog_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/wire"
)

// BenchmarkAppend stores a job's lines in the batches an agent sends (2000
// lines, as `seq` prints them): the storage side of "a job printing
// 1,000,000 lines", in stored lines/s.
func BenchmarkAppend(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := newWorld(b, dbtest.URL(b, d))
			const batch = 2000
			lines := make([]wire.LogLine, batch)
			seq := uint64(0)
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				for k := range lines {
					seq++
					lines[k] = wire.LogLine{Service: "main", Stream: wire.Stdout, Seq: seq, Time: time.Now(), Text: strconv.FormatUint(seq, 10)}
				}
				if err := w.logs.Append(context.Background(), w.job, 1, lines); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "lines/s")
			// On a shared machine the wall clock says more about the
			// neighbours: this process's CPU per line says what it costs
			// (PostgreSQL's own work not included).
			b.ReportMetric(float64(b.N*batch)/(cpuTime()-cpu).Seconds(), "lines/cpu-s")
		})
	}
}

// cpuTime is the CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

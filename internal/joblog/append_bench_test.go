package joblog_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/ids"
	"github.com/levers9/levers9/internal/wire"
)

// BenchmarkAppend stores a job's lines in the batches an agent sends (2000
// lines, as `seq` prints them): the storage side of "a job printing
// 1,000,000 lines", in stored lines/s. Beside it, the same run's
// baseline: the same rows written by hand, multi-row INSERTs of 1,000 rows
// in one transaction per batch, nothing checked or looked up.
func BenchmarkAppend(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := newWorld(b, dbtest.URL(b, d))
			const batch = 2000
			lines := make([]wire.LogLine, batch)
			seq := uint64(0)
			fill := func() {
				for k := range lines {
					seq++
					lines[k] = wire.LogLine{Service: "main", Stream: wire.Stdout, Seq: seq, Time: time.Now(), Text: strconv.FormatUint(seq, 10)}
				}
			}
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				fill()
				if err := w.logs.Append(context.Background(), w.job, 1, lines); err != nil {
					b.Fatal(err)
				}
			}
			wall, used := time.Since(start), cpuTime()-cpu
			b.StopTimer()
			// The baseline writes attempt 2's lines: same table, same sizes.
			seq = 0
			start, cpu = time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				fill()
				if err := rawInsert(w, lines); err != nil {
					b.Fatal(err)
				}
			}
			baseWall, baseUsed := time.Since(start), cpuTime()-cpu
			n := float64(b.N * batch)
			b.ReportMetric(n/wall.Seconds(), "lines/s")
			// On a shared machine the wall clock says more about the
			// neighbours: this process's CPU per line says what it costs
			// (PostgreSQL's own work not included).
			b.ReportMetric(n/used.Seconds(), "lines/cpu-s")
			b.ReportMetric(n/baseWall.Seconds(), "baseline-lines/s")
			b.ReportMetric(n/baseUsed.Seconds(), "baseline-lines/cpu-s")
			b.ReportMetric(baseWall.Seconds()/wall.Seconds(), "vs-baseline(wall)")
		})
	}
}

// rawInsert stores lines as attempt 2 of w's job by hand.
func rawInsert(w *world, lines []wire.LogLine) error {
	ctx := context.Background()
	tx, err := w.db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for start := 0; start < len(lines); start += 1000 {
		chunk := lines[start:min(start+1000, len(lines))]
		if err := rawChunk(ctx, tx, w.db.Dialect, w.job, chunk); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func rawChunk(ctx context.Context, tx *sql.Tx, d, jobID string, lines []wire.LogLine) error {
	var q strings.Builder
	q.WriteString("INSERT INTO log_lines (id, tenant_id, environment_id, job_id, attempt, service, stream, seq, time, text) VALUES ")
	args := make([]any, 0, 10*len(lines))
	for i, l := range lines {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('(')
		for c := range 10 {
			if c > 0 {
				q.WriteByte(',')
			}
			if d == dialect.Postgres {
				fmt.Fprintf(&q, "$%d", len(args)+c+1)
			} else {
				q.WriteByte('?')
			}
		}
		q.WriteByte(')')
		args = append(args, ids.New("log"), "t", "e", jobID, 2, l.Service, string(l.Stream), int64(l.Seq), l.Time, l.Text)
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// cpuTime is the CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

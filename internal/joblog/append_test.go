package joblog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// numbered is lines from..to of service svc, a millisecond apart from at.
func numbered(svc string, from, to int, at time.Time) []wire.LogLine {
	var lines []wire.LogLine
	for i := from; i <= to; i++ {
		lines = append(lines, wire.LogLine{Service: svc, Stream: wire.Stdout, Seq: uint64(i),
			Time: at.Add(time.Duration(i) * time.Millisecond), Text: fmt.Sprintf("line %d", i)})
	}
	return lines
}

// A batch the agent resends after a reconnect (whole, or overlapping what
// was stored) stores nothing twice; batches spanning several statements
// keep every line, in order, with its time; a batch refused stores none
// of the batches committed with it.
func TestAppendResend(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Microsecond)
		first := numbered("main", 1, 2500, at) // more than one SQLite statement
		if err := w.logs.Append(ctx, w.job, 1, first); err != nil {
			t.Fatal(err)
		}
		// The same batch again, then an overlapping one and another
		// attempt's in one transaction.
		if err := w.logs.Append(ctx, w.job, 1, first); err != nil {
			t.Fatal(err)
		}
		err := w.logs.AppendAll(ctx, []joblog.Batch{
			{JobID: w.job, Attempt: 1, Lines: numbered("main", 2000, 3000, at)},
			{JobID: w.job, Attempt: 2, Lines: numbered("main", 1, 10, at)},
		})
		if err != nil {
			t.Fatal(err)
		}
		// Refused as a whole: the first batch is new but the second names
		// a stream that does not exist.
		err = w.logs.AppendAll(ctx, []joblog.Batch{
			{JobID: w.job, Attempt: 1, Lines: numbered("main", 3001, 3005, at)},
			{JobID: w.job, Attempt: 1, Lines: []wire.LogLine{{Service: "main", Stream: "bogus", Seq: 3006, Time: at, Text: "x"}}},
		})
		if err == nil {
			t.Fatal("a line of an unknown stream was stored")
		}

		sys := viewer.SystemContext(ctx)
		for attempt, want := range map[int]int{1: 3000, 2: 10} {
			n, err := w.db.Ent.LogLine.Query().Where(logline.JobID(w.job), logline.Attempt(attempt)).Count(sys)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("attempt %d: %d lines stored, want %d", attempt, n, want)
			}
		}
		var next int64 = 1
		for {
			page, err := w.logs.Lines(w.admin, w.job, 1, next, joblog.MaxPage)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, l := range page {
				want := at.Add(time.Duration(next) * time.Millisecond)
				if l.Seq != next || l.Text != fmt.Sprintf("line %d", next) || !l.Time.Equal(want) || l.Stream != "stdout" {
					t.Fatalf("line %d read as %+v (time want %v)", next, l, want)
				}
				next++
			}
		}
		if next != 3001 {
			t.Fatalf("read lines 1..%d, want 1..3000", next-1)
		}
	})
}

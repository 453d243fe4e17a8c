package joblog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/database"
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

// On PostgreSQL a new batch goes in with a plain INSERT; when the same
// lines commit in another transaction after the batch was found new (an
// agent's resend on another replica racing the first copy), the unique
// key refuses them and the batch is stored again skipping them: the first
// copy's lines stay, once, and the batch's later lines are added.
func TestAppendRacingResend(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.URL(t, "postgres"))
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Microsecond)
	first := numbered("first", 1, 10, at)
	stored, release, firstDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	releaseFirst := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseFirst) // a failed test still ends the first transaction
	go func() {
		firstDone <- w.db.InTx(ctx, func(tx *database.Tx) error {
			if err := w.logs.AppendTx(ctx, tx, []joblog.Batch{{JobID: w.job, Attempt: 1, Lines: first}}); err != nil {
				return err
			}
			close(stored)
			<-release // uncommitted until the resend waits on its lines
			return nil
		})
	}()
	select {
	case <-stored:
	case err := <-firstDone:
		t.Fatal(err)
	}
	resendDone := make(chan error, 1)
	go func() { resendDone <- w.logs.Append(ctx, w.job, 1, numbered("resend", 1, 15, at)) }()
	// The resend found no line stored and waits on the unique key for the
	// first transaction's outcome.
	for {
		var waiting int
		err := w.db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO log_lines%'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-resendDone:
			t.Fatalf("the resend ended (%v) before the first copy committed", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	releaseFirst()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-resendDone; err != nil {
		t.Fatalf("storing the resend: %v", err)
	}
	page, err := w.logs.Lines(w.admin, w.job, 1, 1, joblog.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 15 {
		t.Fatalf("%d lines stored, want 15: %+v", len(page), page)
	}
	for i, l := range page {
		want := "first"
		if i >= 10 {
			want = "resend"
		}
		if l.Seq != int64(i+1) || l.Service != want {
			t.Errorf("line %d stored as seq %d of %s, want %d of %s", i+1, l.Seq, l.Service, i+1, want)
		}
	}
}

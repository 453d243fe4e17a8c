package joblog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// appendAttempt stores lines from..to of service svc as attempt wrote them.
func (w *world) appendAttempt(t *testing.T, attempt int, svc string, from, to int, at time.Time) {
	t.Helper()
	var lines []wire.LogLine
	for i := from; i <= to; i++ {
		lines = append(lines, wire.LogLine{Service: svc, Stream: wire.Stdout, Seq: uint64(i), Time: at.Add(time.Duration(i) * time.Millisecond),
			Text: fmt.Sprintf("attempt %d line %d", attempt, i)})
	}
	if err := w.logs.Append(context.Background(), w.job, attempt, lines); err != nil {
		t.Fatal(err)
	}
	if err := w.other.Publish(context.Background(), notify.TopicJob, w.job); err != nil {
		t.Fatal(err)
	}
}

// Each attempt keeps its own lines, numbered from 1; readers default to
// the current attempt and may ask for any earlier one; a follow of an
// attempt ends when the job moves on to the next.
func TestAttempts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		at := time.Now().UTC().Truncate(time.Second)
		w.appendAttempt(t, 1, "main", 1, 3, at)
		w.appendAttempt(t, 1, "main", 2, 3, at) // a resend: stored once
		ch, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 1, 3)

		// Requeued: attempt 1 writes no more, so its follow ends although
		// the job goes on.
		if err := w.db.Ent.Job.UpdateOneID(w.job).SetAttempt(2).Exec(viewer.SystemContext(context.Background())); err != nil {
			t.Fatal(err)
		}
		if err := w.other.Publish(context.Background(), notify.TopicJob, w.job); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, ch)

		w.appendAttempt(t, 2, "main", 1, 2, at.Add(time.Minute))
		w.appendAttempt(t, 2, "side", 3, 3, at.Add(time.Minute))
		check := func(attempt int, want []string) {
			t.Helper()
			lines, err := w.logs.Lines(w.admin, w.job, attempt, 1, joblog.MaxPage)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, l := range lines {
				if l.Seq != int64(i+1) {
					t.Errorf("attempt %d: line %d has seq %d", attempt, i, l.Seq)
				}
				got = append(got, fmt.Sprintf("%d:%s", l.Attempt, l.Text))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("attempt %d: lines %q, want %q", attempt, got, want)
			}
		}
		check(1, []string{"1:attempt 1 line 1", "1:attempt 1 line 2", "1:attempt 1 line 3"})
		check(2, []string{"2:attempt 2 line 1", "2:attempt 2 line 2", "2:attempt 2 line 3"})
		check(0, []string{"2:attempt 2 line 1", "2:attempt 2 line 2", "2:attempt 2 line 3"})
		for _, bad := range []int{-1, 3} {
			if _, err := w.logs.Lines(w.admin, w.job, bad, 1, 10); err == nil {
				t.Errorf("attempt %d was accepted", bad)
			}
		}

		// The tail of an attempt is its last seq and each service's last
		// line time.
		seq, last, err := w.logs.Tail(w.admin, w.job, 2)
		if err != nil {
			t.Fatal(err)
		}
		wantMain, wantSide := at.Add(time.Minute+2*time.Millisecond), at.Add(time.Minute+3*time.Millisecond)
		if seq != 3 || len(last) != 2 || !last["main"].Equal(wantMain) || !last["side"].Equal(wantSide) {
			t.Errorf("tail of attempt 2 = %d %v; want 3, main %v, side %v", seq, last, wantMain, wantSide)
		}
		if seq, last, err := w.logs.Tail(w.admin, w.job, 3); err != nil || seq != 0 || len(last) != 0 {
			t.Errorf("tail of an attempt without lines = %d %v %v", seq, last, err)
		}

		// Following a finished attempt replays it and ends.
		ch, err = w.logs.Follow(w.admin, w.job, 1, 2, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 2, 3)
		expectClosed(t, ch)
		if err := w.jobs.MarkEnded(w.admin, w.job, job.StatusComplete, "done", time.Now()); err != nil {
			t.Fatal(err)
		}
	})
}

package joblog_test

import (
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
)

// Follows of one attempt get the lines of its reader: a line is encoded
// once per shape however many follow it. A copy of a line, a changed
// copy above all, and a line the reader never published (history, a line
// built by hand) encode themselves, so no encoding outlives its line.
func TestEncodedShared(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		var got [2][]*joblog.Line
		done := make(chan int, 2)
		for i := range got {
			ch, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for l := range ch {
					got[i] = append(got[i], l)
				}
				done <- i
			}()
		}
		// Follow has joined the attempt's reader when it returns.
		w.add(t, 1, 10)
		if err := w.jobs.MarkEnded(w.admin, w.job, job.StatusComplete, "done", time.Now()); err != nil {
			t.Fatal(err)
		}
		<-done
		<-done
		calls := 0
		encode := func(l *joblog.Line) []byte { calls++; return []byte(l.Text) }
		for _, lines := range got {
			if len(lines) != 10 {
				t.Fatalf("a follow got %d lines, want 10", len(lines))
			}
			for _, l := range lines {
				if b := l.Encoded("shape", encode); string(b) != l.Text {
					t.Fatalf("line %d encoded as %q, want %q", l.Seq, b, l.Text)
				}
			}
		}
		if calls != 10 {
			t.Errorf("10 lines followed twice were encoded %d times, want 10", calls)
		}
		calls = 0
		if b := got[1][0].Encoded("other shape", func(*joblog.Line) []byte { calls++; return []byte("other") }); string(b) != "other" || calls != 1 {
			t.Errorf("another shape: got %q after %d encodings, want its own encoding", b, calls)
		}
		c := *got[0][0]
		c.Text = "changed"
		if b := c.Encoded("shape", encode); string(b) != "changed" {
			t.Errorf("a changed copy encoded as %q", b)
		}
		byHand := &joblog.Line{Seq: 1, Text: "by hand"}
		calls = 0
		byHand.Encoded("shape", encode)
		byHand.Encoded("shape", encode)
		if calls != 2 {
			t.Errorf("a line no reader published was encoded %d times for two calls, want 2 (never cached)", calls)
		}
	})
}

// A line the reader's window let go of keeps no encoding: the window's
// bound also bounds the encodings a hub holds.
//
// Not parallel: it shrinks the window of every hub.
func TestEncodedDroppedWithWindow(t *testing.T) {
	defer joblog.SetWindow(5)()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		ch, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Lines 1..5 come from the reader's window, which then lets go of
		// them for the next ones.
		w.add(t, 1, 5)
		var lines []*joblog.Line
		for range 5 {
			lines = append(lines, <-ch)
		}
		w.add(t, 6, 20)
		if err := w.jobs.MarkEnded(w.admin, w.job, job.StatusComplete, "done", time.Now()); err != nil {
			t.Fatal(err)
		}
		for l := range ch {
			lines = append(lines, l)
		}
		if len(lines) != 20 {
			t.Fatalf("got %d lines, want 20", len(lines))
		}
		for _, l := range lines[:5] {
			calls := 0
			encode := func(l *joblog.Line) []byte { calls++; return []byte(l.Text) }
			l.Encoded("shape", encode)
			l.Encoded("shape", encode)
			if calls != 2 {
				t.Fatalf("line %d, out of the window, was encoded %d times for two calls, want 2", l.Seq, calls)
			}
		}
	})
}

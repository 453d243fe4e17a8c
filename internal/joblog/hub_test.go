package joblog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
)

// collect reads ch to its end in the background, pausing pause after every
// every-th line (0: never) to fall behind.
func collect(ch <-chan *joblog.Line, every int, pause time.Duration) <-chan []int64 {
	res := make(chan []int64, 1)
	go func() {
		var got []int64
		for l := range ch {
			got = append(got, l.Seq)
			if every > 0 && len(got)%every == 0 {
				time.Sleep(pause)
			}
		}
		res <- got
	}()
	return res
}

// checkSeqs fails unless got is exactly from..to.
func checkSeqs(t *testing.T, name string, got []int64, from, to int64) {
	t.Helper()
	if int64(len(got)) != to-from+1 {
		t.Errorf("%s: got %d lines, want %d..%d", name, len(got), from, to)
	}
	for i, seq := range got {
		if seq != from+int64(i) {
			t.Errorf("%s: line %d is seq %d, want %d", name, i, seq, from+int64(i))
			return
		}
	}
}

// Many followers of one attempt share one reader: those that start with it,
// those that join mid-stream from the start or the middle, and one that
// falls behind the reader's window all get every line once, in order,
// across lines committed out of order; a follower that never reads is
// dropped without holding up the others; the job's end closes them all and
// the reader stops.
//
// Not parallel: it shrinks the window of every hub.
func TestHubFanOut(t *testing.T) {
	defer joblog.SetWindow(200)()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		w.add(t, 1, 100) // history before the reader starts
		const last = 3000
		type follower struct {
			name string
			from int64
			got  <-chan []int64
		}
		var fs []follower
		follow := func(name string, from int64, every int, pause time.Duration) {
			t.Helper()
			ch, err := w.logs.Follow(w.admin, w.job, 0, from, joblog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, follower{name, from, collect(ch, every, pause)})
		}
		for i := range 20 {
			follow(fmt.Sprint("early ", i), 1, 0, 0)
		}
		follow("lagging", 1, 100, 50*time.Millisecond)
		errc := make(chan error, 1)
		if _, err := w.logs.Follow(w.admin, w.job, 0, 1, joblog.Options{
			Buffer: 4, StallAfter: 300 * time.Millisecond, OnError: func(err error) { errc <- err },
		}); err != nil {
			t.Fatal(err)
		}
		if n := w.logs.Readers(); n != 1 {
			t.Errorf("%d readers for one attempt, want 1", n)
		}
		for from := 101; from <= last; from += 100 {
			if from == 1501 {
				// Committed out of order: the later batch first.
				w.add(t, from+50, from+99)
				w.add(t, from, from+49)
			} else {
				w.add(t, from, from+99)
			}
			if from == 1001 {
				follow("joined from the start", 1, 0, 0)
				follow("joined mid-stream", 900, 0, 0)
				follow("joined ahead", 2500, 0, 0)
			}
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, joblog.ErrTooSlow) {
				t.Fatalf("the slow follower ended with %v, want ErrTooSlow", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the slow follower was not dropped")
		}
		if n := w.logs.Readers(); n != 1 {
			t.Errorf("%d readers for one attempt, want 1", n)
		}
		if err := w.jobs.MarkEnded(w.admin, w.job, job.StatusComplete, "done", time.Now()); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			select {
			case got := <-f.got:
				checkSeqs(t, f.name, got, f.from, last)
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: not closed", f.name)
			}
		}
		waitNone(t, w.logs)
		waitNoReader(t, w.logs)

		// After the end, a new follower replays and ends with a reader of
		// its own, which stops too.
		ch, err := w.logs.Follow(w.admin, w.job, 0, 2990, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkSeqs(t, "after the end", <-collect(ch, 0, 0), 2990, last)
		waitNoReader(t, w.logs)
	})
}

// The reader stops when its last follower leaves, though the job runs on;
// a later follower starts another.
func TestHubStopsWithLastFollower(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		w.add(t, 1, 10)
		ctx1, cancel1 := context.WithCancel(w.admin)
		ctx2, cancel2 := context.WithCancel(w.admin)
		defer cancel2()
		ch1, err := w.logs.Follow(ctx1, w.job, 0, 1, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ch2, err := w.logs.Follow(ctx2, w.job, 0, 5, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch1, 1, 10)
		expect(t, ch2, 5, 10)
		w.add(t, 11, 12)
		expect(t, ch1, 11, 12)
		expect(t, ch2, 11, 12)
		cancel1()
		for range ch1 {
		}
		if n := w.logs.Readers(); n != 1 {
			t.Fatalf("%d readers with one follower left, want 1", n)
		}
		w.add(t, 13, 13)
		expect(t, ch2, 13, 13)
		cancel2()
		for range ch2 {
		}
		waitNoReader(t, w.logs)

		ch3, err := w.logs.Follow(w.admin, w.job, 0, 12, joblog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ch3, 12, 13)
		w.add(t, 14, 14)
		expect(t, ch3, 14, 14)
		if n := w.logs.Readers(); n != 1 {
			t.Fatalf("%d readers, want 1", n)
		}
	})
}

func waitNoReader(t *testing.T, logs *joblog.Service) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for logs.Readers() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers still running", logs.Readers())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

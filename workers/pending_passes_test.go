package workers

import (
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A window's pass starts BackupDelay after the window ends: at least that
// long after any change made in it, at most twice that.
func TestBackupWindows(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for step := time.Duration(0); step < 4*BackupDelay; step += 137 * time.Millisecond {
		now := start.Add(step)
		w := backupWindow(now)
		at := backupAt(w)
		if wait := at.Sub(now); wait < BackupDelay || wait > 2*BackupDelay {
			t.Fatalf("a change at %s: its pass starts %s later", now.Format(time.StampMilli), wait)
		}
		if backupWindow(at) <= w {
			t.Fatalf("the pass of window %d starts inside it", w)
		}
	}
}

// A pass is relied on only when River reported it as an existing row
// waiting for its time, and only by changes of its window.
func TestPendingPasses(t *testing.T) {
	t.Parallel()
	const w = 1000
	result := func(dup bool, state rivertype.JobState) *rivertype.JobInsertResult {
		return &rivertype.JobInsertResult{UniqueSkippedAsDuplicate: dup, Job: &rivertype.JobRow{State: state}}
	}
	tests := []struct {
		name   string
		res    *rivertype.JobInsertResult
		asked  int64 // window
		covers bool
	}{
		{"a new row may still roll back", result(false, rivertype.JobStateScheduled), w, false},
		{"a waiting row", result(true, rivertype.JobStateScheduled), w, true},
		{"a waiting row, asked in the next window", result(true, rivertype.JobStateScheduled), w + 1, false},
		{"a running pass may have read the queue", result(true, rivertype.JobStateRunning), w, false},
		{"an available pass may start any moment", result(true, rivertype.JobStateAvailable), w, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var p pendingPasses
			p.saw("q1", w, tc.res)
			if got := p.covers("q1", tc.asked); got != tc.covers {
				t.Fatalf("covers = %v, want %v", got, tc.covers)
			}
			if p.covers("q2", w) {
				t.Fatal("another queue is covered")
			}
		})
	}
	// Queues no longer asked about do not stay: past windows are swept.
	var p pendingPasses
	for i := range 2 * passesKept {
		p.saw(fmt.Sprint("old", i), w, result(true, rivertype.JobStateScheduled))
	}
	p.saw("new", w+1, result(true, rivertype.JobStateScheduled))
	if len(p.window) > passesKept {
		t.Fatalf("%d passes remembered, want at most %d", len(p.window), passesKept)
	}
	if !p.covers("new", w+1) {
		t.Fatal("the newest pass was swept")
	}
}

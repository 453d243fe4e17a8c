package workers

import (
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A pass is relied on only when River reported it as an existing, waiting
// row, and only until passMargin before its time.
func TestPendingPasses(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	result := func(dup bool, state rivertype.JobState, in time.Duration) *rivertype.JobInsertResult {
		return &rivertype.JobInsertResult{UniqueSkippedAsDuplicate: dup, Job: &rivertype.JobRow{State: state, ScheduledAt: now.Add(in)}}
	}
	tests := []struct {
		name   string
		res    *rivertype.JobInsertResult
		asked  time.Duration // after now
		covers bool
	}{
		{"a new row may still roll back", result(false, rivertype.JobStateScheduled, 3*time.Second), 0, false},
		{"a waiting row", result(true, rivertype.JobStateScheduled, 3*time.Second), 0, true},
		{"a waiting row, asked later", result(true, rivertype.JobStateScheduled, 3*time.Second), 1900 * time.Millisecond, true},
		{"within the margin of its time", result(true, rivertype.JobStateScheduled, 3*time.Second), 2 * time.Second, false},
		{"past its time", result(true, rivertype.JobStateScheduled, 3*time.Second), 5 * time.Second, false},
		{"a running pass may have read the queue", result(true, rivertype.JobStateRunning, 0), 0, false},
		{"an available pass may start any moment", result(true, rivertype.JobStateAvailable, 0), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var p pendingPasses
			p.saw("q1", tc.res, now)
			if got := p.covers("q1", now.Add(tc.asked)); got != tc.covers {
				t.Fatalf("covers = %v, want %v", got, tc.covers)
			}
			if p.covers("q2", now) {
				t.Fatal("another queue is covered")
			}
		})
	}
	// Once past, a pass is forgotten: a later, newer pass replaces it.
	var p pendingPasses
	p.saw("q", result(true, rivertype.JobStateScheduled, time.Second), now)
	if p.covers("q", now) || len(p.until) != 0 {
		t.Fatalf("a pass due within the margin is kept: %v", p.until)
	}
	p.saw("q", result(true, rivertype.JobStateScheduled, 10*time.Second), now)
	if !p.covers("q", now) {
		t.Fatal("the newer pass is not relied on")
	}
	// Queues no longer asked about do not stay: past passes are swept.
	for i := range 2 * passesKept {
		p.saw(fmt.Sprint("old", i), result(true, rivertype.JobStateScheduled, time.Second), now)
	}
	later := now.Add(time.Minute)
	p.saw("new", result(true, rivertype.JobStateScheduled, time.Minute+3*time.Second), later)
	if len(p.until) > passesKept {
		t.Fatalf("%d passes remembered, want at most %d", len(p.until), passesKept)
	}
	if !p.covers("new", later) {
		t.Fatal("the newest pass was swept")
	}
}

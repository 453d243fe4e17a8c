// Package timewindow cuts a span of time into equal steps, for charts of
// something over time (GPUs booked, jobs waiting) reconstructed from the
// start and end times of rows: no history table is kept.
package timewindow

import "time"

// Window is a span of time cut into equal steps (the bars of a chart).
type Window struct {
	From  time.Time
	Step  time.Duration
	Steps int
	// Now ends the last step early: time after it has not happened.
	Now time.Time
}

// LastHours is the window of the n whole hours up to now, the current hour
// (so far) last.
func LastHours(now time.Time, n int) Window {
	end := now.UTC().Truncate(time.Hour).Add(time.Hour)
	return Window{From: end.Add(-time.Duration(n) * time.Hour), Step: time.Hour, Steps: n, Now: now}
}

// End is when the window ends.
func (w Window) End() time.Time { return w.From.Add(time.Duration(w.Steps) * w.Step) }

// Starts are the steps' start times.
func (w Window) Starts() []time.Time {
	out := make([]time.Time, w.Steps)
	for i := range out {
		out[i] = w.From.Add(time.Duration(i) * w.Step)
	}
	return out
}

// Elapsed is the part of step i gone by at Now: 1 for a past step, less
// for the current one, 0 for one to come (no Now: 1).
func (w Window) Elapsed(i int) float64 {
	if w.Now.IsZero() {
		return 1
	}
	s := w.From.Add(time.Duration(i) * w.Step)
	return min(max(float64(w.Now.Sub(s))/float64(w.Step), 0), 1)
}

// Spread adds weight × the overlap of [from, to) with each step, as a
// fraction of the step (of its part before Now), to per: the average of
// something present from from to to, in each step.
func (w Window) Spread(per []float64, from, to time.Time, weight float64) {
	for i, s := range w.Starts() {
		e := s.Add(w.Step)
		if !w.Now.IsZero() && w.Now.Before(e) {
			e = w.Now
		}
		if !e.After(s) {
			continue
		}
		lo, hi := maxTime(from, s), minTime(to, e)
		if hi.After(lo) {
			per[i] += weight * float64(hi.Sub(lo)) / float64(e.Sub(s))
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

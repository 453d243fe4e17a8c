package scheduler

import "time"

// timing is where a pass spent its time, for the debug log: reading
// (nodes, jobs, what is held), placing (the pure function) and writing.
type timing struct {
	last                 time.Time
	read, place, written time.Duration
}

func (t *timing) start() { t.last = time.Now() }

// add counts the time since the last mark in *to.
func (t *timing) add(to *time.Duration) {
	now := time.Now()
	*to += now.Sub(t.last)
	t.last = now
}

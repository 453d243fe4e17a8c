package billing

import (
	"math"
	"time"
)

// Rounding rule. A running job is charged its per-minute price for every
// whole minute since it started; when it ends, the last partial minute is
// charged pro rata per started second (0.3 s counts as 1 s). A job's price
// per minute is fixed when it starts.

// MinuteCharge is what one minute (or the last part of one) of a run costs.
type MinuteCharge struct {
	Index  int64 // 0 for the first minute of the run
	Start  time.Time
	End    time.Time
	Tokens Tokens
}

// Partial prices the last partial minute of d at perMinute.
func Partial(perMinute Tokens, d time.Duration) Tokens {
	secs := math.Ceil(d.Seconds())
	return Tokens(math.Round(float64(perMinute) * secs / 60))
}

// RunCost is the exact cost of running for d at perMinute, start fee
// excluded: what the meter charges, minute by minute, for a run of d.
func RunCost(perMinute Tokens, d time.Duration) Tokens {
	if d <= 0 {
		return 0
	}
	full := int64(d / time.Minute)
	return perMinute*Tokens(full) + Partial(perMinute, d-time.Duration(full)*time.Minute)
}

// Due lists the minutes of a run that started at start and are not yet
// charged (minutes before charged are), up to now; when the run ended (at
// end, not after now), its last partial minute too. closed reports whether
// the run is then fully charged.
func Due(start time.Time, end *time.Time, now time.Time, charged int64, perMinute Tokens) (due []MinuteCharge, closed bool) {
	until, ended := now, false
	if end != nil && !end.After(now) {
		until, ended = *end, true
	}
	elapsed := until.Sub(start)
	if elapsed < 0 {
		return nil, false
	}
	full := int64(elapsed / time.Minute)
	for k := charged; k < full; k++ {
		s := start.Add(time.Duration(k) * time.Minute)
		due = append(due, MinuteCharge{Index: k, Start: s, End: s.Add(time.Minute), Tokens: perMinute})
	}
	if !ended {
		return due, false
	}
	if rest := elapsed - time.Duration(full)*time.Minute; rest > 0 && charged <= full {
		s := start.Add(time.Duration(full) * time.Minute)
		due = append(due, MinuteCharge{Index: full, Start: s, End: until, Tokens: Partial(perMinute, rest)})
	}
	return due, true
}

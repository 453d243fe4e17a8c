package metering

import (
	"context"
	"time"

	"github.com/levers9/levers9/ent"
)

// Stopping ahead of the boundary. Under `stop` a running job holds the
// minute it is in; whether it may hold the next is known before that
// minute begins. A job whose payer cannot hold it is stopped StopLead
// before the boundary, so it ends, and its node stops it, within the
// minute it paid for: billed to the second, never past the balance.
// Deciding at the meter's tick after the boundary let it run on unbilled
// for up to a minute.

// StopLead is how long before the boundary such a job is stopped: time
// for the stop to reach its node and the node to stop its services.
const StopLead = 15 * time.Second

// Stop is a running job to be stopped at At, ahead of a minute its payer
// cannot hold, unless the payer can by then (a grant came).
type Stop struct {
	JobID   string
	Attempt int
	At      time.Time
}

// next reports whether open job j, whose due minutes are charged, may go
// on into the minute after the one it is in: after that one is charged,
// what the payer has beyond the minutes its other jobs hold must cover it.
func (b *budget) next(j *ent.Job) bool {
	return b.spare(j)-j.PricePerMinute >= j.PricePerMinute
}

// RunsOn reports whether running job j, whose minutes are charged up to
// the one it is in, may go on into the next: always, unless its payer is
// under `stop` and cannot hold it. It locks the payer's balance for the
// rest of c's transaction, as every decision on it does.
func RunsOn(ctx context.Context, c *ent.Client, j *ent.Job) (bool, error) {
	held, err := budgetsOf(ctx, c, []*ent.Job{j})
	if err != nil {
		return false, err
	}
	b := held.of(j)
	return b == nil || b.next(j), nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

package queues

import (
	"context"
	"fmt"
	"sort"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/timewindow"
)

// Depth is how many jobs waited in one queue, on average, in each step of
// a window.
type Depth struct {
	QueueID string
	Waiting []float64
}

// Depths reconstructs the depth of each queue over w from its jobs'
// submission and start times: a job waits from when it was submitted until
// it started, or ended without starting (cancelled while pending), or now.
// A retried job's later waits are not told apart (its start time is its
// last start). One query, as the viewer (the jobs they may see: their
// environment's); queues with no waiting jobs in w are left out, the
// deepest first.
func (s *Service) Depths(ctx context.Context, w timewindow.Window) ([]Depth, error) {
	js, err := s.Ent.Job.Query().
		Where(job.CreatedAtLT(w.End()),
			job.Or(job.StartedAtGT(w.From),
				job.And(job.StartedAtIsNil(), job.Or(job.FinishedAtIsNil(), job.FinishedAtGT(w.From))))).
		Select(job.FieldQueueID, job.FieldCreatedAt, job.FieldStartedAt, job.FieldFinishedAt, job.FieldStatus).
		All(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading the jobs waiting in the last %d steps: %w", w.Steps, err)
	}
	return depths(js, w), nil
}

func depths(js []*ent.Job, w timewindow.Window) []Depth {
	per := map[string][]float64{}
	sums := map[string]float64{}
	for _, j := range js {
		to := w.End()
		switch {
		case j.StartedAt != nil:
			to = *j.StartedAt
		case j.FinishedAt != nil:
			to = *j.FinishedAt
		case j.Status != job.StatusPending:
			continue // ended without times: nothing to tell
		}
		if per[j.QueueID] == nil {
			per[j.QueueID] = make([]float64, w.Steps)
		}
		w.Spread(per[j.QueueID], j.CreatedAt, to, 1)
	}
	var out []Depth
	for q, v := range per {
		for _, x := range v {
			sums[q] += x
		}
		if sums[q] > 0 {
			out = append(out, Depth{QueueID: q, Waiting: v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := sums[out[i].QueueID], sums[out[j].QueueID]; a != b {
			return a > b
		}
		return out[i].QueueID < out[j].QueueID
	})
	return out
}

package jobs

import (
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
)

// Phase is a stretch of a job's life as its timeline shows it.
type Phase string

// The phases, in order. Placement and the image pull are one phase: a
// service's placement is not timed apart from its dispatch, and the
// agent's pull progress is not stored, so "starting" runs from the moment
// the job was sent to its node to the moment its services ran.
const (
	PhaseQueued   Phase = "queued"
	PhaseStarting Phase = "placed, pulling, starting"
	PhaseRunning  Phase = "running"
	PhaseEnded    Phase = "ended"
)

// Phases lists the phases in order.
var Phases = []Phase{PhaseQueued, PhaseStarting, PhaseRunning, PhaseEnded}

// PhaseSpan is one phase of a service, from From to To; Open spans go on
// (the job has not left the phase yet). PhaseEnded has no length: it marks
// when the service ended.
type PhaseSpan struct {
	Phase    Phase
	From, To time.Time
	Open     bool
}

// ServiceTimeline is the phases of one service of a job.
type ServiceTimeline struct {
	Service string
	Spans   []PhaseSpan
}

// Timeline is a job's life from its submission to its end (or now).
type Timeline struct {
	Start, End time.Time
	Services   []ServiceTimeline
}

// TimelineOf reconstructs job j's phases per service (svcs, in their
// order) from the times the rows keep: submitted (the job's creation),
// dispatched to its node, started, finished. Only the current attempt's
// times are kept: a retried job shows its queueing from the submission.
func TimelineOf(j *ent.Job, svcs []*ent.Service, now time.Time) Timeline {
	t := Timeline{Start: j.CreatedAt, End: now}
	if j.FinishedAt != nil {
		t.End = *j.FinishedAt
	}
	if t.End.Before(t.Start) {
		t.End = t.Start
	}
	for _, s := range svcs {
		t.Services = append(t.Services, serviceTimeline(j, s))
	}
	return t
}

func serviceTimeline(j *ent.Job, s *ent.Service) ServiceTimeline {
	row := ServiceTimeline{Service: s.Name}
	// end is when the service ended; nil while it goes on.
	end := s.FinishedAt
	if end == nil && Ended(job.Status(s.Status)) {
		end = j.FinishedAt
	}
	// add adds phase p from from to the first moment of to that is known,
	// open when none is.
	add := func(p Phase, from time.Time, to ...*time.Time) {
		for _, t := range to {
			if t != nil {
				row.Spans = append(row.Spans, PhaseSpan{Phase: p, From: from, To: *t})
				return
			}
		}
		row.Spans = append(row.Spans, PhaseSpan{Phase: p, From: from, Open: true})
	}
	placed := s.DispatchedAt
	if placed == nil {
		placed = s.StartedAt // rows from before dispatch was timed
	}
	add(PhaseQueued, j.CreatedAt, placed, end)
	if placed == nil {
		return endOf(row, end) // never left the queue
	}
	if s.DispatchedAt != nil {
		add(PhaseStarting, *s.DispatchedAt, s.StartedAt, end)
	}
	if s.StartedAt == nil {
		return endOf(row, end) // ended (or still) starting
	}
	add(PhaseRunning, *s.StartedAt, end)
	return endOf(row, end)
}

// endOf marks the end of row, if it ended.
func endOf(row ServiceTimeline, end *time.Time) ServiceTimeline {
	if end != nil {
		row.Spans = append(row.Spans, PhaseSpan{Phase: PhaseEnded, From: *end, To: *end})
	}
	return row
}

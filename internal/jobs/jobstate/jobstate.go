// Package jobstate is the job state machine as data: which events move a
// job, and its services, from which state to which. It is pure (no
// database), so internal/jobs applies it in its transactions and the
// scheduler's batched placement builds its conditions from it without
// importing the jobs service.
package jobstate

import (
	"slices"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
)

// ReasonWaiting is a new job's reason until a scheduling pass looks at it:
// submission sets it, the scheduler replaces it with why the job waits.
const ReasonWaiting = "waiting to be scheduled"

// ReasonBacklogged is the reason of a job waiting in a queue whose last
// scheduling pass found no node with room for the smallest request there:
// the pass notes it on the jobs it did not read, submission on new ones.
func ReasonBacklogged(queueName string) string {
	return "waiting for free capacity in queue " + queueName
}

// ReasonSubmitted is a new job's reason in a queue: ReasonBacklogged while
// the queue is backlogged, else ReasonWaiting.
func ReasonSubmitted(queueName string, backlogged bool) string {
	if backlogged {
		return ReasonBacklogged(queueName)
	}
	return ReasonWaiting
}

// Event is something that happens to a job or one of its services.
type Event string

// The events, in the order a job meets them.
const (
	// Waiting: a scheduling pass notes why a job still waits.
	Waiting Event = "waiting"
	// Placed: a scheduling pass puts the job's services on a node.
	Placed Event = "placed"
	// Dispatched: the job is sent to its node's agent.
	Dispatched Event = "dispatched"
	// Resent: the agent lost a job it was sent and never started; it is
	// sent again.
	Resent Event = "resent"
	// ServiceRunning: the agent reports one service running.
	ServiceRunning Event = "service running"
	// JobRunning: every service of the job has started.
	JobRunning Event = "job running"
	// ServiceExited and ServiceFailed: the agent reports one service
	// ended. A report on a service that ended already (stopped by a
	// cancel) only records its exit code.
	ServiceExited Event = "service exited"
	ServiceFailed Event = "service failed"
	// Completed: every service exited 0.
	Completed Event = "completed"
	// Failed: a service failed, the job could not be sent, or the agent
	// lost it.
	Failed Event = "failed"
	// Requeued: its node was lost and the job has a retry left (or never
	// started): it waits to be placed again.
	Requeued Event = "requeued"
	// NodeLost: its node was lost and the running job has no retry left.
	NodeLost Event = "node lost"
	// Cancelled: a user cancelled it.
	Cancelled Event = "cancelled"
	// OutOfTokens: the `stop` budget policy stopped it.
	OutOfTokens Event = "out of tokens"
	// IdleStopped: its queue's idle timeout stopped it.
	IdleStopped Event = "idle-stopped"
)

// Events lists every event.
func Events() []Event {
	return []Event{Waiting, Placed, Dispatched, Resent, ServiceRunning, JobRunning, ServiceExited, ServiceFailed,
		Completed, Failed, Requeued, NodeLost, Cancelled, OutOfTokens, IdleStopped}
}

// JobStates and ServiceStates list every state, in order; EndedStates are
// the job states no event leaves.
var (
	JobStates     = []job.Status{job.StatusPending, job.StatusRunning, job.StatusComplete, job.StatusError, job.StatusCancelled}
	ServiceStates = []service.Status{service.StatusPending, service.StatusRunning, service.StatusComplete, service.StatusError, service.StatusCancelled}
	EndedStates   = []job.Status{job.StatusComplete, job.StatusError, job.StatusCancelled}
)

// Ended reports whether a job in status s has ended: it changes no more and
// its followers stop.
func Ended(s job.Status) bool { return slices.Contains(EndedStates, s) }

const (
	jp, jr, jc, je, jx = job.StatusPending, job.StatusRunning, job.StatusComplete, job.StatusError, job.StatusCancelled
	sp, sr, sc, se, sx = service.StatusPending, service.StatusRunning, service.StatusComplete, service.StatusError, service.StatusCancelled
)

// jobs is, per event, the job states it applies from and the state each
// moves to. A job in any other state refuses the event: nothing is written.
var jobs = map[Event]map[job.Status]job.Status{
	Waiting:        {jp: jp},
	Placed:         {jp: jp},
	Dispatched:     {jp: jp},
	Resent:         {jp: jp},
	ServiceRunning: {jp: jp},
	JobRunning:     {jp: jr},
	// Service ends apply whatever the job's state; the job's own change,
	// if any, is the Completed or Failed that Settle derives.
	ServiceExited: {jp: jp, jr: jr, jc: jc, je: je, jx: jx},
	ServiceFailed: {jp: jp, jr: jr, jc: jc, je: je, jx: jx},
	Completed:     {jp: jc, jr: jc},
	Failed:        {jp: je, jr: je},
	Requeued:      {jp: jp, jr: jp},
	NodeLost:      {jr: je},
	Cancelled:     {jp: jx, jr: jx},
	OutOfTokens:   {jr: jx},
	IdleStopped:   {jr: jx},
}

// services is, per event, the service states it moves and to what. For an
// event on one service (ServiceRunning, ServiceExited, ServiceFailed) a
// service in another state refuses it; an event on the whole job moves
// the job's services in these states and leaves the others as they are.
var services = map[Event]map[service.Status]service.Status{
	Placed:         {sp: sp},
	Dispatched:     {sp: sp},
	Resent:         {sp: sp},
	ServiceRunning: {sp: sr},
	JobRunning:     {sp: sr},
	ServiceExited:  {sp: sc, sr: sc, sc: sc, se: se, sx: sx},
	ServiceFailed:  {sp: se, sr: se, sc: sc, se: se, sx: sx},
	Completed:      {sp: sc, sr: sc},
	Failed:         {sp: se, sr: se},
	Requeued:       {sp: sp, sr: sp, sc: sp, se: sp, sx: sp},
	NodeLost:       {sp: se, sr: se},
	Cancelled:      {sp: sx, sr: sx},
	OutOfTokens:    {sp: sx, sr: sx},
	IdleStopped:    {sp: sx, sr: sx},
}

// Next is the state event e moves a job in state from to; false when the
// job refuses it.
func Next(e Event, from job.Status) (job.Status, bool) {
	to, ok := jobs[e][from]
	return to, ok
}

// NextService is the state event e moves a service in state from to;
// false when e does not move it.
func NextService(e Event, from service.Status) (service.Status, bool) {
	to, ok := services[e][from]
	return to, ok
}

// From lists the job states event e applies from, in JobStates order.
func From(e Event) []job.Status {
	var out []job.Status
	for _, s := range JobStates {
		if _, ok := jobs[e][s]; ok {
			out = append(out, s)
		}
	}
	return out
}

// ServiceFrom lists the service states event e moves, in ServiceStates
// order.
func ServiceFrom(e Event) []service.Status {
	var out []service.Status
	for _, s := range ServiceStates {
		if _, ok := services[e][s]; ok {
			out = append(out, s)
		}
	}
	return out
}

// To is the one state event e moves every job it applies to into; false
// when that depends on the job's state (service ends keep it).
func To(e Event) (job.Status, bool) {
	var to job.Status
	for _, s := range jobs[e] {
		if to != "" && s != to {
			return "", false
		}
		to = s
	}
	return to, to != ""
}

// ServiceTo is the one state event e moves services into; false when
// it depends on their state.
func ServiceTo(e Event) (service.Status, bool) {
	var to service.Status
	for _, s := range services[e] {
		if to != "" && s != to {
			return "", false
		}
		to = s
	}
	return to, to != ""
}

// Ends reports whether event e ends a job.
func Ends(e Event) bool {
	to, ok := To(e)
	return ok && slices.Contains([]job.Status{jc, je, jx}, to)
}

// Settle is the job event that ending one service (ServiceExited or
// ServiceFailed) decides, given the states of all the job's services after
// it: one failure fails the job (the agent stops the others), all exited
// completes it; otherwise nothing yet.
func Settle(e Event, states []service.Status) (Event, bool) {
	switch e {
	case ServiceFailed:
		return Failed, true
	case ServiceExited:
		if len(states) == 0 {
			return "", false
		}
		for _, s := range states {
			if s != sc {
				return "", false
			}
		}
		return Completed, true
	}
	return "", false
}

// Ending is the event that ends a job with status: COMPLETE, ERROR or
// CANCELLED (a user's cancel).
func Ending(status job.Status) (Event, bool) {
	switch status {
	case jc:
		return Completed, true
	case je:
		return Failed, true
	case jx:
		return Cancelled, true
	}
	return "", false
}

package jobstate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobs/jobstate"
)

const (
	P, R, C, E, X = "PENDING", "RUNNING", "COMPLETE", "ERROR", "CANCELLED"
)

// allowedJob lists every (event, job state) → job state the machine
// allows; every other pair must be refused.
var allowedJob = map[jobstate.Event][][2]string{
	jobstate.Waiting:        {{P, P}},
	jobstate.Placed:         {{P, P}},
	jobstate.Dispatched:     {{P, P}},
	jobstate.Resent:         {{P, P}},
	jobstate.ServiceRunning: {{P, P}},
	jobstate.JobRunning:     {{P, R}},
	jobstate.ServiceExited:  {{P, P}, {R, R}, {C, C}, {E, E}, {X, X}},
	jobstate.ServiceFailed:  {{P, P}, {R, R}, {C, C}, {E, E}, {X, X}},
	jobstate.Completed:      {{P, C}, {R, C}},
	jobstate.Failed:         {{P, E}, {R, E}},
	jobstate.Requeued:       {{P, P}, {R, P}},
	jobstate.NodeLost:       {{R, E}},
	jobstate.Cancelled:      {{P, X}, {R, X}},
	jobstate.OutOfTokens:    {{R, X}},
	jobstate.IdleStopped:    {{R, X}},
}

// allowedService lists every (event, service state) → service state.
var allowedService = map[jobstate.Event][][2]string{
	jobstate.Waiting:        nil,
	jobstate.Placed:         {{P, P}},
	jobstate.Dispatched:     {{P, P}},
	jobstate.Resent:         {{P, P}},
	jobstate.ServiceRunning: {{P, R}},
	jobstate.JobRunning:     {{P, R}},
	jobstate.ServiceExited:  {{P, C}, {R, C}, {C, C}, {E, E}, {X, X}},
	jobstate.ServiceFailed:  {{P, E}, {R, E}, {C, C}, {E, E}, {X, X}},
	jobstate.Completed:      {{P, C}, {R, C}},
	jobstate.Failed:         {{P, E}, {R, E}},
	jobstate.Requeued:       {{P, P}, {R, P}, {C, P}, {E, P}, {X, P}},
	jobstate.NodeLost:       {{P, E}, {R, E}},
	jobstate.Cancelled:      {{P, X}, {R, X}},
	jobstate.OutOfTokens:    {{P, X}, {R, X}},
	jobstate.IdleStopped:    {{P, X}, {R, X}},
}

func TestJobTransitions(t *testing.T) {
	t.Parallel()
	if len(allowedJob) != len(jobstate.Events()) {
		t.Fatalf("the test lists %d events, the machine has %d", len(allowedJob), len(jobstate.Events()))
	}
	for _, e := range jobstate.Events() {
		for _, from := range jobstate.JobStates {
			t.Run(fmt.Sprintf("%s/%s", e, from), func(t *testing.T) {
				t.Parallel()
				want, allowed := "", false
				for _, p := range allowedJob[e] {
					if p[0] == string(from) {
						want, allowed = p[1], true
					}
				}
				to, ok := jobstate.Next(e, from)
				if ok != allowed || string(to) != want {
					t.Fatalf("Next(%s, %s) = %q, %v; want %q, %v", e, from, to, ok, want, allowed)
				}
				if slices.Contains(jobstate.From(e), from) != allowed {
					t.Fatalf("From(%s) = %v; applies from %s: %v", e, jobstate.From(e), from, allowed)
				}
			})
		}
	}
}

func TestServiceTransitions(t *testing.T) {
	t.Parallel()
	if len(allowedService) != len(jobstate.Events()) {
		t.Fatalf("the test lists %d events, the machine has %d", len(allowedService), len(jobstate.Events()))
	}
	for _, e := range jobstate.Events() {
		for _, from := range jobstate.ServiceStates {
			t.Run(fmt.Sprintf("%s/%s", e, from), func(t *testing.T) {
				t.Parallel()
				want, allowed := "", false
				for _, p := range allowedService[e] {
					if p[0] == string(from) {
						want, allowed = p[1], true
					}
				}
				to, ok := jobstate.NextService(e, from)
				if ok != allowed || string(to) != want {
					t.Fatalf("NextService(%s, %s) = %q, %v; want %q, %v", e, from, to, ok, want, allowed)
				}
				if slices.Contains(jobstate.ServiceFrom(e), from) != allowed {
					t.Fatalf("ServiceFrom(%s) = %v; moves %s: %v", e, jobstate.ServiceFrom(e), from, allowed)
				}
			})
		}
	}
}

// Unknown events and states are refused.
func TestUnknownRefused(t *testing.T) {
	t.Parallel()
	if _, ok := jobstate.Next("exploded", job.StatusPending); ok {
		t.Fatal("an unknown event was allowed")
	}
	if _, ok := jobstate.Next(jobstate.Cancelled, "LIMBO"); ok {
		t.Fatal("an unknown state was allowed")
	}
	if _, ok := jobstate.NextService("exploded", service.StatusPending); ok {
		t.Fatal("an unknown service event was allowed")
	}
}

func TestTo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    jobstate.Event
		to   job.Status
		one  bool
		ends bool
	}{
		{jobstate.Placed, job.StatusPending, true, false},
		{jobstate.JobRunning, job.StatusRunning, true, false},
		{jobstate.Requeued, job.StatusPending, true, false},
		{jobstate.ServiceExited, "", false, false},
		{jobstate.Completed, job.StatusComplete, true, true},
		{jobstate.Failed, job.StatusError, true, true},
		{jobstate.NodeLost, job.StatusError, true, true},
		{jobstate.Cancelled, job.StatusCancelled, true, true},
		{jobstate.OutOfTokens, job.StatusCancelled, true, true},
		{jobstate.IdleStopped, job.StatusCancelled, true, true},
	} {
		t.Run(string(tc.e), func(t *testing.T) {
			t.Parallel()
			to, ok := jobstate.To(tc.e)
			if to != tc.to || ok != tc.one || jobstate.Ends(tc.e) != tc.ends {
				t.Fatalf("To = %q, %v, Ends = %v; want %q, %v, %v", to, ok, jobstate.Ends(tc.e), tc.to, tc.one, tc.ends)
			}
		})
	}
}

// One failure fails the job; all exited completes it; anything else waits.
func TestSettle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		e      jobstate.Event
		states []service.Status
		want   jobstate.Event
	}{
		{"a failure fails", jobstate.ServiceFailed, []service.Status{service.StatusError, service.StatusRunning}, jobstate.Failed},
		{"all exited completes", jobstate.ServiceExited, []service.Status{service.StatusComplete, service.StatusComplete}, jobstate.Completed},
		{"one still running waits", jobstate.ServiceExited, []service.Status{service.StatusComplete, service.StatusRunning}, ""},
		{"one never started waits", jobstate.ServiceExited, []service.Status{service.StatusComplete, service.StatusPending}, ""},
		{"a cancelled one does not complete", jobstate.ServiceExited, []service.Status{service.StatusComplete, service.StatusCancelled}, ""},
		{"no services decide nothing", jobstate.ServiceExited, nil, ""},
		{"running decides nothing", jobstate.ServiceRunning, []service.Status{service.StatusRunning}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := jobstate.Settle(tc.e, tc.states)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("Settle = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestEnding(t *testing.T) {
	t.Parallel()
	for status, want := range map[job.Status]jobstate.Event{
		job.StatusComplete: jobstate.Completed, job.StatusError: jobstate.Failed, job.StatusCancelled: jobstate.Cancelled,
		job.StatusPending: "", job.StatusRunning: "",
	} {
		if got, ok := jobstate.Ending(status); got != want || ok != (want != "") {
			t.Errorf("Ending(%s) = %q, %v; want %q", status, got, ok, want)
		}
	}
}

// TestEndedStatesAreFinal: Ended holds exactly for the states no event
// moves a job out of, so the list and the table cannot disagree.
func TestEndedStatesAreFinal(t *testing.T) {
	t.Parallel()
	for _, s := range jobstate.JobStates {
		final := true
		for _, e := range jobstate.Events() {
			if to, ok := jobstate.Next(e, s); ok && to != s {
				final = false
			}
		}
		if jobstate.Ended(s) != final {
			t.Errorf("state %s: Ended %v, but no event leaves it: %v", s, jobstate.Ended(s), final)
		}
	}
}

// In writes its states into the statement, Live those of jobs not ended.
func TestIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    predicate.Job
		want string
	}{
		{jobstate.In(job.StatusPending), "`jobs`.`status` IN ('PENDING')"},
		{jobstate.Live(), "`jobs`.`status` IN ('PENDING', 'RUNNING')"},
	} {
		s := sql.Select("*").From(sql.Table(job.Table))
		tc.p(s)
		q, args := s.Query()
		if !strings.HasSuffix(q, "WHERE "+tc.want) || len(args) != 0 {
			t.Errorf("query %q with %v, want it to end in %q with no argument", q, args, tc.want)
		}
	}
}

package deployapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/viewer"
)

// TaskPath is the URL of task id.
func TaskPath(id string) string { return "/api/tasks/" + id }

// MaxWait is the longest ?wait= taken (longer ones wait this long).
const MaxWait = time.Minute

// pollEvery is how often an anonymous waiter (a public function's task
// polled by its ID) first reads the task: it has no viewer to be
// signalled as. The interval doubles up to pollMax, so that anonymous
// callers holding ?wait= open cost the database little.
const (
	pollEvery = 250 * time.Millisecond
	pollMax   = 2 * time.Second
)

// task serves GET /api/tasks/{id}[?wait=SECONDS]: 202 while the task
// runs, else its outcome. A token's viewer sees the tasks functions.Task
// lets it; without a token, what functions.Task lets anyone see (a
// public function's tasks: their ID is the capability).
func (a *API) task(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	wait, err := waitParam(r)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	v, err := a.caller(r)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	ctx := r.Context()
	if v != nil {
		ctx = viewer.NewContext(ctx, v)
	}
	t, err := a.cfg.Functions.Task(ctx, id)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	if t, err = a.wait(ctx, t, wait, v != nil); err != nil {
		a.fail(w, err, id)
		return
	}
	a.outcome(w, ctx, t, TaskPath(id), v != nil)
}

// wait waits up to d for t to end, signalled when the viewer in ctx may
// be (signed), else by polling.
func (a *API) wait(ctx context.Context, t *ent.Task, d time.Duration, signed bool) (*ent.Task, error) {
	deadline, poll := time.Now().Add(d), pollEvery
	for !ended(t.State) && ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		var next *ent.Task
		var err error
		if signed {
			next, err = a.cfg.Functions.Await(ctx, t.ID, left)
			if isNotFound(err) {
				// Shown by functions.Task, not readable as the viewer
				// (a public function's task): poll it instead.
				signed, err = false, nil
				continue
			}
		} else {
			select {
			case <-ctx.Done():
				return t, nil
			case <-time.After(min(poll, left)):
			}
			poll = min(2*poll, pollMax)
			next, err = a.cfg.Functions.Task(ctx, t.ID)
		}
		if err != nil {
			return t, err
		}
		t = next
	}
	return t, nil
}

// answer waits up to d for t to end and answers with how it stands.
func (a *API) answer(w http.ResponseWriter, c call, t *ent.Task, d time.Duration) {
	t, err := a.wait(c.ctx, t, d, true)
	if err != nil {
		a.fail(w, err, t.ID)
		return
	}
	a.outcome(w, c.ctx, t, c.route.Prefix(), c.private)
}

// ended: the task will not change any more (DEAD: a task queue's item
// that failed every attempt, until requeued).
func ended(s task.State) bool { return functions.Ended(s) || s == task.StateDEAD }

// taskState is the body of a task's URL while it runs, and of a queued
// item.
type taskState struct {
	Task  string    `json:"task"`
	State string    `json:"state"`
	URL   string    `json:"url"`
	Error *apiError `json:"error,omitempty"`
}

// pending answers status (202 Accepted while t runs) with t's URL.
func pending(w http.ResponseWriter, t *ent.Task, status int) {
	w.Header().Set(TaskHeader, t.ID)
	w.Header().Set("Location", TaskPath(t.ID))
	writeJSON(w, status, taskState{Task: t.ID, State: string(t.State), URL: TaskPath(t.ID)})
}

// outcome answers with how t stands: 202 while it runs; an HTTP-made
// call's answer replayed, or its failure as an error with the task; any
// other call's state (never its pickles).
func (a *API) outcome(w http.ResponseWriter, ctx context.Context, t *ent.Task, prefix string, private bool) {
	if !ended(t.State) {
		pending(w, t, http.StatusAccepted)
		return
	}
	status, failure := failureOf(t)
	if t.Source != task.SourceHTTP {
		w.Header().Set(TaskHeader, t.ID)
		writeJSON(w, http.StatusOK, taskState{Task: t.ID, State: string(t.State), URL: TaskPath(t.ID), Error: failure})
		return
	}
	if failure != nil {
		a.refuse(w, status, *failure)
		return
	}
	e, err := a.result(ctx, t)
	if b, ok := isBadResponse(err); ok {
		a.refuse(w, http.StatusBadGateway, apiError{Code: "BAD_RESPONSE", Message: b.Error(), Task: t.ID})
		return
	}
	if err != nil {
		a.fail(w, err, t.ID)
		return
	}
	replay(w, t.ID, e, prefix, private)
}

// failureOf is how ended task t failed, with the status that answers it
// (nil when it completed).
func failureOf(t *ent.Task) (int, *apiError) {
	switch t.State {
	case task.StateCOMPLETE:
		return http.StatusOK, nil
	case task.StateCANCELLED:
		return http.StatusConflict, &apiError{Code: "CANCELLED", Message: "the call was cancelled", Task: t.ID}
	}
	e := &apiError{Code: "FUNCTION_ERROR", Message: "the function failed", Task: t.ID}
	f := functions.FailureOf(t)
	if f == nil {
		return http.StatusInternalServerError, e
	}
	switch f.Kind {
	case functions.KindException:
		e.Message = f.Message
	case functions.KindTimeout:
		e.Code = "TIMEOUT"
		e.Message = "timeout: " + f.Message
		return http.StatusGatewayTimeout, e
	default:
		e.Message = f.Kind + ": " + f.Message
	}
	return http.StatusInternalServerError, e
}

// waitParam is ?wait=SECONDS (at most MaxWait; 0 when absent).
func waitParam(r *http.Request) (time.Duration, error) {
	s := r.URL.Query().Get("wait")
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fault.Invalid("wait", "give seconds, 0 to %d", int(MaxWait.Seconds()))
	}
	return time.Duration(min(f, MaxWait.Seconds()) * float64(time.Second)), nil
}

package apps

import (
	"net/http"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	entapp "github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/ui/app"
)

// The app page's bounds: the newest calls, errors and containers.
const (
	recentCalls      = 50
	recentErrors     = 20
	recentContainers = 50
)

// taskStates are the columns of the calls-by-state counts, in a call's
// order of life.
// DEAD (a task-queue item that failed every attempt) comes last.
var taskStates = []task.State{task.StatePENDING, task.StateRUNNING, task.StateCOMPLETE, task.StateERROR, task.StateCANCELLED, task.StateDEAD}

// detailPage is an app with its functions, containers, calls and errors.
type detailPage struct {
	App                 appRow
	CodeHash            string
	Stopped, StopReason string
	States              []string // the count columns' headings
	// CanManage shows the version buttons: to admins and the app's owner.
	CanManage   bool
	Versions    []appVersionView
	Deployments []deploymentView
	Functions   []functionView
	Containers  []containerView
	Calls       []callView
	Errors      []errorView
}

// functionView is one function of the app, formatted.
type functionView struct {
	ID, Name, Target                 string // Target is module:qualname
	Version, Kind                    string
	Queue, GPU, CPU, Memory, Timeout string
	Image                            string
	Concurrency, Retries             string
	Min, Max, KeepWarm               string
	Counts                           []string // calls in each of taskStates
}

// containerView is one container of the app's functions.
type containerView struct {
	ID, Function, State, StopReason string
	JobID                           string // "" before its job is submitted
	Started, Stopped                string
}

// callView is one call in the recent calls table.
type callView struct {
	ID, Function, State, Attempt, Took, Started string
	Source, Error                               string // on the filtered list
}

// errorView is one failed call with its error.
type errorView struct {
	ID, Function, Kind, Message, Traceback, When string
}

func (h *handlers) detail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	a, err := c.App.Query().Where(entapp.ID(r.PathValue("id"))).WithOwner().
		WithFunctions(func(q *ent.FunctionQuery) {
			q.WithQueue().Order(ent.Asc(function.FieldName), ent.Desc(function.FieldVersion))
		}).
		Only(ctx)
	if err != nil {
		return err
	}
	fns := a.Edges.Functions
	ids := make([]string, len(fns))
	names := make(map[string]string, len(fns))
	for i, f := range fns {
		ids[i] = f.ID
		names[f.ID] = f.Name
	}
	kinds := map[string]int{}
	for _, f := range fns {
		if f.Version == a.LiveVersion {
			kinds[string(f.Kind)]++
		}
	}
	p := detailPage{App: newAppRow(a, kinds), CodeHash: a.CodeHash, Stopped: when(a.StoppedAt), StopReason: a.StopReason}
	for _, s := range taskStates {
		p.States = append(p.States, string(s))
	}

	// Calls by function and state: one grouped query for every function.
	counts := map[string]map[task.State]int{}
	var grouped []struct {
		FunctionID string `json:"function_id"`
		State      string `json:"state"`
		Count      int    `json:"count"`
	}
	if err := c.Task.Query().Where(task.AppID(a.ID)).
		GroupBy(task.FieldFunctionID, task.FieldState).Aggregate(ent.Count()).Scan(ctx, &grouped); err != nil {
		return err
	}
	for _, g := range grouped {
		if counts[g.FunctionID] == nil {
			counts[g.FunctionID] = map[task.State]int{}
		}
		counts[g.FunctionID][task.State(g.State)] = g.Count
	}
	for _, f := range fns {
		p.Functions = append(p.Functions, newFunctionView(f, counts[f.ID]))
	}
	now := time.Now()
	if err := h.deployments(r, a, counts, now, &p); err != nil {
		return err
	}

	if len(ids) > 0 {
		ctrs, err := c.Container.Query().Where(container.FunctionIDIn(ids...)).
			Order(ent.Desc(container.FieldCreatedAt), ent.Desc(container.FieldID)).Limit(recentContainers).All(ctx)
		if err != nil {
			return err
		}
		for _, ct := range ctrs {
			p.Containers = append(p.Containers, containerView{ID: ct.ID, Function: names[ct.FunctionID],
				State: string(ct.State), StopReason: ct.StopReason, JobID: ct.JobID,
				Started: when(&ct.CreatedAt), Stopped: when(ct.StoppedAt)})
		}
	}

	calls, err := c.Task.Query().Where(task.AppID(a.ID)).
		Order(ent.Desc(task.FieldCreatedAt), ent.Desc(task.FieldID)).Limit(recentCalls).All(ctx)
	if err != nil {
		return err
	}
	for _, t := range calls {
		p.Calls = append(p.Calls, callView{ID: t.ID, Function: names[t.FunctionID], State: string(t.State),
			Attempt: attempts(t), Took: span(t.StartedAt, t.FinishedAt, now), Started: when(t.StartedAt)})
	}

	failed, err := c.Task.Query().Where(task.AppID(a.ID), task.StateIn(task.StateERROR, task.StateDEAD)).
		Order(ent.Desc(task.FieldCreatedAt), ent.Desc(task.FieldID)).Limit(recentErrors).All(ctx)
	if err != nil {
		return err
	}
	for _, t := range failed {
		at := t.FinishedAt
		if at == nil {
			at = &t.UpdatedAt
		}
		p.Errors = append(p.Errors, errorView{ID: t.ID, Function: names[t.FunctionID], Kind: orDash(t.ErrorKind),
			Message: t.ErrorMessage, Traceback: t.ErrorTraceback, When: when(at)})
	}
	return app.Render(w, r, http.StatusOK, detailView(h.rt.Frame(r, "App "+a.Name), p))
}

// newFunctionView formats f; its queue edge is read when loaded.
func newFunctionView(f *ent.Function, counts map[task.State]int) functionView {
	v := functionView{ID: f.ID, Name: f.Name, Target: f.Module + ":" + f.Qualname, Queue: "—",
		Version: "v" + strconv.Itoa(f.Version), Kind: string(f.Kind),
		GPU: gpuSpec(f), CPU: cpus(f.CPU), Memory: mib(f.MemoryMib), Timeout: short(time.Duration(f.TimeoutSeconds) * time.Second),
		Image: orDash(f.Image), Concurrency: strconv.Itoa(f.Concurrency), Retries: strconv.Itoa(f.Retries),
		Min: strconv.Itoa(f.MinContainers), Max: strconv.Itoa(f.MaxContainers), KeepWarm: strconv.Itoa(f.KeepWarm)}
	if f.Edges.Queue != nil {
		v.Queue = f.Edges.Queue.Name
	}
	for _, s := range taskStates {
		v.Counts = append(v.Counts, strconv.Itoa(counts[s]))
	}
	return v
}

// attempts is "attempt of max", e.g. "1 of 3".
func attempts(t *ent.Task) string {
	return strconv.Itoa(t.Attempt) + " of " + strconv.Itoa(t.MaxAttempts)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

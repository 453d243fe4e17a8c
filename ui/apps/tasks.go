package apps

import (
	"net/http"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	entapp "github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/app"
)

// taskListLimit bounds the filtered calls list: the newest ones.
const taskListLimit = 100

// taskListPage is an app's calls filtered by function and state (the
// dead letters of a task queue: ?function=ID&state=DEAD).
type taskListPage struct {
	AppID, App      string
	Function, State string // the filter, as names
	Here            string // this page's path with its query, to come back to
	Calls           []callView
	Requeue         bool // the viewer may requeue (the service is there)
	Limit           string
}

func (h *handlers) tasks(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	a, err := c.App.Query().Where(entapp.ID(r.PathValue("id"))).
		WithFunctions(func(q *ent.FunctionQuery) {
			q.Select(function.FieldID, function.FieldAppID, function.FieldName, function.FieldVersion)
		}).Only(ctx)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, f := range a.Edges.Functions {
		names[f.ID] = f.Name + " v" + strconv.Itoa(f.Version)
	}
	q := r.URL.Query()
	p := taskListPage{AppID: a.ID, App: a.Name, Function: "every function", State: "every state",
		Here: "/apps/" + a.ID + "/tasks?" + q.Encode(), Requeue: h.fns != nil, Limit: strconv.Itoa(taskListLimit)}
	tq := c.Task.Query().Where(task.AppID(a.ID))
	if fn := q.Get("function"); fn != "" {
		name, ok := names[fn]
		if !ok {
			return fault.Invalid("function", "no function %q in app %s", fn, a.Name)
		}
		p.Function = name
		tq = tq.Where(task.FunctionID(fn))
	}
	if s := q.Get("state"); s != "" {
		if err := task.StateValidator(task.State(s)); err != nil {
			return fault.Invalid("state", "unknown state %q", s)
		}
		p.State = s
		tq = tq.Where(task.StateEQ(task.State(s)))
	}
	ts, err := tq.Order(ent.Desc(task.FieldCreatedAt), ent.Desc(task.FieldID)).Limit(taskListLimit).All(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, t := range ts {
		p.Calls = append(p.Calls, callView{ID: t.ID, Function: names[t.FunctionID], State: string(t.State),
			Attempt: attempts(t), Took: span(t.StartedAt, t.FinishedAt, now), Started: when(&t.CreatedAt),
			Source: string(t.Source), Error: t.ErrorMessage})
	}
	return app.Render(w, r, http.StatusOK, taskListView(h.rt.Frame(r, "Calls of "+a.Name), p))
}

package apps

import (
	"net/http"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/ui/app"
)

// taskPage is one call: where it runs, how it ended, its phases.
type taskPage struct {
	ID, State, Attempt   string
	Source               string // CALL, HTTP, QUEUE or CRON
	Idempotency          string // the idempotency key, or ""
	Dead                 bool   // a task-queue item that failed every attempt
	Requeue              bool   // show the requeue button
	Function, FunctionID string
	App, AppID           string
	Map                  string // the map it belongs to, or ""
	Queued, Took         string
	// WaitReason is why a PENDING call still waits ("" when not known).
	WaitReason                string
	ErrorKind, ErrorMessage   string
	Traceback                 string
	Container, ContainerState string // "" before a container took it
	JobID                     string
	Phases                    []phaseView
}

// phaseView is one step from queued to finished.
type phaseView struct {
	Name string
	At   string // the moment, or "—"
	// Offset is the time since queued ("+1.2s"); Skipped marks a phase a
	// warm container had no need of; neither is set for a phase not
	// reached yet.
	Offset  string
	Skipped bool
	// Value and Max draw the offset as a bar (a meter: no styles needed),
	// in milliseconds of the whole timeline.
	Value, Max string
}

func (h *handlers) task(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	t, err := c.Task.Query().Where(task.ID(r.PathValue("id"))).
		WithFunction(func(q *ent.FunctionQuery) { q.WithApp() }).Only(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	p := taskPage{ID: t.ID, State: string(t.State), Attempt: attempts(t), Source: sourceName(t.Source),
		Idempotency: t.IdempotencyKey, Dead: t.State == task.StateDEAD, Requeue: t.State == task.StateDEAD && h.fns != nil, AppID: t.AppID, App: t.AppID,
		FunctionID: t.FunctionID, Function: t.FunctionID, Map: t.MapID,
		Queued: when(&t.CreatedAt), Took: span(t.StartedAt, t.FinishedAt, now),
		ErrorKind: t.ErrorKind, ErrorMessage: t.ErrorMessage, Traceback: t.ErrorTraceback,
		Phases: phases(t)}
	if f := t.Edges.Function; f != nil {
		p.Function = f.Name
		if f.Edges.App != nil {
			p.App = f.Edges.App.Name
		}
	}
	if t.ContainerID != "" {
		ct, err := c.Container.Query().Where(container.ID(t.ContainerID)).Only(ctx)
		switch {
		case err == nil:
			p.Container, p.ContainerState, p.JobID = ct.ID, string(ct.State), ct.JobID
		case ent.IsNotFound(err):
			p.Container = t.ContainerID // gone, or the viewer may not see it
		default:
			return err
		}
	}
	if t.State == task.StatePENDING && h.fns != nil {
		reason, err := h.fns.WaitReason(ctx, t)
		if err != nil {
			// The reason is a hint: the call's page is still worth showing.
			h.rt.Deps.Log.Warn("a call's wait reason", "task", t.ID, "err", err)
		}
		p.WaitReason = reason
	}
	return app.Render(w, r, http.StatusOK, taskView(h.rt.Frame(r, "Call "+t.ID), p))
}

// phases lays out t's timeline from queued (created_at) to finished, each
// step's offset from queued. A container start step absent from a call
// that started was skipped: the call went to a warm container.
func phases(t *ent.Task) []phaseView {
	steps := []struct {
		name string
		at   *time.Time
		cold bool // a step of starting a container
	}{
		{"queued", &t.CreatedAt, false}, {"scheduled", t.ScheduledAt, true}, {"image ready", t.ImageReadyAt, true},
		{"code fetched", t.CodeFetchedAt, true}, {"process started", t.ProcessStartedAt, true},
		{"imported", t.ImportedAt, true}, {"call started", t.StartedAt, false}, {"finished", t.FinishedAt, false},
	}
	last := t.CreatedAt // the latest step reached, for the bars' scale
	for _, s := range steps {
		if s.at != nil && s.at.After(last) {
			last = *s.at
		}
	}
	total := max(last.Sub(t.CreatedAt).Milliseconds(), 1)
	out := make([]phaseView, 0, len(steps))
	for _, s := range steps {
		v := phaseView{Name: s.name, At: when(s.at), Max: strconv.FormatInt(total, 10)}
		switch {
		case s.at != nil:
			d := s.at.Sub(t.CreatedAt)
			v.Offset = "+" + short(d)
			v.Value = strconv.FormatInt(max(d.Milliseconds(), 0), 10)
		case s.cold && t.StartedAt != nil:
			v.Skipped = true
		}
		out = append(out, v)
	}
	return out
}

// sourceName says what made a call, for people.
func sourceName(s task.Source) string {
	switch s {
	case task.SourceHTTP:
		return "HTTP request"
	case task.SourceQUEUE:
		return "task queue put"
	case task.SourceCRON:
		return "cron schedule"
	}
	return "call"
}

// Package queues is the admin page of queues: the list with limits and
// prices, and the form creating or changing one (limits, prices per CPU,
// memory and GPU type, start fee, multiplier, the idle stop of interactive
// jobs, and the nodes, storages and groups it uses), through the same
// domain functions as GraphQL.
package queues

import (
	"fmt"
	"net/http"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the queue pages, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/queues", app.Admin, h.list)
	rt.Handle("GET /admin/queues/new", app.Admin, h.blank)
	rt.Handle("POST /admin/queues", app.Admin, h.create)
	rt.Handle("GET /admin/queues/{id}", app.Admin, h.edit)
	rt.Handle("POST /admin/queues/{id}", app.Admin, h.update)
}

type handlers struct{ rt *app.Router }

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	qs, err := h.rt.Deps.DB.Ent.Queue.Query().WithNodes().WithGroups().WithStorages().
		Order(ent.Asc(queue.FieldName)).All(r.Context())
	if err != nil {
		return fmt.Errorf("listing queues: %w", err)
	}
	rows := make([]row, len(qs))
	for i, q := range qs {
		rows[i] = describe(q)
	}
	depth, err := h.depthChart(r.Context(), qs)
	if err != nil {
		return err
	}
	return app.Render(w, r, http.StatusOK, list(h.rt.Frame(r, "Queues"), rows, depth))
}

// formPage is the queue form with what its checkboxes offer.
type formPage struct {
	Form                    *adminkit.Form
	Action                  string // where the form posts
	New                     bool   // a new queue, not a change
	Nodes, Storages, Groups []components.Option
}

func (h *handlers) blank(w http.ResponseWriter, r *http.Request) error {
	return h.form(w, r, http.StatusOK, nil, adminkit.NewForm("queue", h.rt.CSRFToken(r), defaults()))
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "queue", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	s := parse(f)
	if !f.Invalid() {
		q, err := h.rt.Deps.Queues.Create(r.Context(), s.create())
		if err == nil {
			h.rt.Flash(r, "Queue "+q.Name+" created.")
			return app.SeeOther(w, r, "/admin/queues")
		}
		if err := f.Absorb(err, "name", fields); err != nil {
			return err
		}
	}
	return h.form(w, r, http.StatusBadRequest, nil, f)
}

// load is queue id with its edges, as the viewer may see it.
func (h *handlers) load(r *http.Request) (*ent.Queue, error) {
	return h.rt.Deps.DB.Ent.Queue.Query().Where(queue.ID(r.PathValue("id"))).
		WithNodes().WithGroups().WithStorages().Only(r.Context())
}

func (h *handlers) edit(w http.ResponseWriter, r *http.Request) error {
	q, err := h.load(r)
	if err != nil {
		return err
	}
	return h.form(w, r, http.StatusOK, q, adminkit.NewForm("queue", h.rt.CSRFToken(r), values(q)))
}

func (h *handlers) update(w http.ResponseWriter, r *http.Request) error {
	q, err := h.load(r)
	if err != nil {
		return err
	}
	f, err := adminkit.Posted(r, "queue", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	s := parse(f)
	if !f.Invalid() {
		q2, err := h.rt.Deps.Queues.Update(r.Context(), q.ID, s.update(q))
		if err == nil {
			h.rt.Flash(r, "Queue "+q2.Name+" saved.")
			return app.SeeOther(w, r, "/admin/queues")
		}
		if err := f.Absorb(err, "name", fields); err != nil {
			return err
		}
	}
	return h.form(w, r, http.StatusBadRequest, q, f)
}

// form shows the queue form with the tenant's nodes, storages and groups.
func (h *handlers) form(w http.ResponseWriter, r *http.Request, status int, q *ent.Queue, f *adminkit.Form) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	p := formPage{Form: f, Action: action(q), New: q == nil}
	ns, err := c.Node.Query().Order(ent.Asc(node.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range ns {
		p.Nodes = append(p.Nodes, components.Option{Value: n.ID, Label: n.Name})
	}
	ss, err := c.Storage.Query().Order(ent.Asc(storage.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing storages: %w", err)
	}
	for _, s := range ss {
		p.Storages = append(p.Storages, components.Option{Value: s.ID, Label: s.Name + " (" + string(s.Kind) + ")"})
	}
	gs, err := c.Group.Query().Order(ent.Asc(group.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	for _, g := range gs {
		p.Groups = append(p.Groups, components.Option{Value: g.ID, Label: g.Name})
	}
	title := "New queue"
	if q != nil {
		title = "Queue " + q.Name
	}
	return app.Render(w, r, status, edit(h.rt.Frame(r, title), title, p))
}

// Package audit is the admin page of the tenant's audit log: who did what
// and when, newest first, a page at a time. It shows superadmins entering
// and leaving the tenant and every change they made while inside it. ent
// privacy shows admins their own tenant's events only (members get 403).
package audit

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// PageSize is how many events one page shows.
const PageSize = 50

// Register adds the audit log page, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/audit", app.Admin, h.list)
}

type handlers struct{ rt *app.Router }

// row is one event as the page shows it.
type row struct {
	ID, When, Action, Target string
	Actor                    string // email, or the ID of a user that no longer exists
	Details                  []string
}

type page struct {
	Rows  []row
	Pager components.Page
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	conn, err := h.rt.Deps.DB.Ent.AuditEvent.Query().Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
		ent.WithAuditEventOrder(&ent.AuditEventOrder{Direction: entgql.OrderDirectionDesc, Field: ent.AuditEventOrderFieldCreatedAt}))
	if err != nil {
		return fmt.Errorf("listing audit events: %w", err)
	}
	events := make([]*ent.AuditEvent, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		events = append(events, e.Node)
	}
	emails, err := h.rt.Deps.Audit.ActorEmails(ctx, events)
	if err != nil {
		return err
	}
	var p page
	for _, e := range events {
		rw := row{ID: e.ID, When: components.When(&e.CreatedAt), Action: e.Action, Target: e.Target, Actor: emails[e.ActorID]}
		if rw.Actor == "" {
			rw.Actor = e.ActorID
		}
		for _, k := range slices.Sorted(maps.Keys(e.Details)) {
			rw.Details = append(rw.Details, k+": "+e.Details[k])
		}
		p.Rows = append(p.Rows, rw)
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/admin/audit", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " events"
	return app.Render(w, r, http.StatusOK, view(h.rt.Frame(r, "Audit log"), p))
}

// Package superadmin is the superadmin's area: the list of tenants with
// what each uses, creating a tenant with its first admin, entering one
// (audited; a banner then shows on every page) and leaving.
package superadmin

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
)

// Register adds the superadmin routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Tenants", "/superadmin", app.Superadmin)
	rt.Handle("GET /superadmin", app.Superadmin, h.list)
	rt.Handle("POST /superadmin/tenants", app.Superadmin, h.create)
	rt.Handle("POST /superadmin/enter", app.Superadmin, h.enter)
	rt.Handle("POST /superadmin/leave", app.Superadmin, h.leave)
}

type handlers struct{ rt *app.Router }

type page struct {
	Tenants []tenantRow
	// Form creates a tenant.
	Form *adminkit.Form
}

// tenantRow is one tenant of the list, formatted.
type tenantRow struct {
	ID, Name, Slug, Domains string
	Current                 bool // the superadmin is inside it
	// Usage, formatted: jobs running now, tokens spent in the last 30
	// days, nodes (online of all).
	Running, Spent, Nodes string
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	return h.render(w, r, http.StatusOK, adminkit.NewForm("tenant", h.rt.CSRFToken(r), nil))
}

// render shows the list with the creation form f.
func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form) error {
	ctx := r.Context()
	ts, err := h.rt.Deps.DB.Ent.Tenant.Query().Order(ent.Asc(tenant.FieldName)).All(ctx)
	if err != nil {
		return err
	}
	usage, err := h.rt.Deps.Tenancy.Usages(ctx, time.Now())
	if err != nil {
		return err
	}
	p := page{Form: f}
	inside := app.Viewer(r).TenantID
	for _, t := range ts {
		row := tenantRow{ID: t.ID, Name: t.Name, Slug: t.Slug,
			Domains: strings.Join(t.EmailDomains, ", "), Current: t.ID == inside, Running: "0", Spent: "0", Nodes: "none"}
		if u := usage[t.ID]; u != nil {
			row.Running, row.Spent = strconv.Itoa(u.RunningJobs), u.Spent.String()
			if u.Nodes > 0 {
				row.Nodes = strconv.Itoa(u.NodesOnline) + " online of " + strconv.Itoa(u.Nodes)
			}
		}
		p.Tenants = append(p.Tenants, row)
	}
	f.Values.Del("adminPassword") // never sent back
	return app.Render(w, r, status, view(h.rt.Frame(r, "Tenants"), p))
}

// enter moves the session into a tenant (tenancy.EnterTenant records it in
// the audit log) and renews the session token: privileges changed.
func (h *handlers) enter(w http.ResponseWriter, r *http.Request) error {
	t, err := h.rt.Deps.Tenancy.EnterTenant(r.Context(), r.PostFormValue("tenant"))
	if err != nil {
		return err
	}
	if err := h.rt.PrivilegeChanged(r.Context()); err != nil {
		return err
	}
	h.rt.Flash(r, "You are inside tenant "+t.Name+".")
	return app.SeeOther(w, r, "/jobs")
}

func (h *handlers) leave(w http.ResponseWriter, r *http.Request) error {
	if err := h.rt.Deps.Tenancy.LeaveTenant(r.Context()); err != nil {
		return err
	}
	if err := h.rt.PrivilegeChanged(r.Context()); err != nil {
		return err
	}
	h.rt.Flash(r, "You left the tenant.")
	return app.SeeOther(w, r, "/superadmin")
}

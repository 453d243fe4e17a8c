// Package superadmin is the superadmin's area: the list of tenants,
// entering one (audited; a banner then shows on every page) and leaving.
package superadmin

import (
	"net/http"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/ui/app"
)

// Register adds the superadmin routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Tenants", "/superadmin", app.Superadmin)
	rt.Handle("GET /superadmin", app.Superadmin, h.list)
	rt.Handle("POST /superadmin/enter", app.Superadmin, h.enter)
	rt.Handle("POST /superadmin/leave", app.Superadmin, h.leave)
}

type handlers struct{ rt *app.Router }

type page struct {
	Tenants []tenantRow
}

// tenantRow is one tenant of the list, formatted.
type tenantRow struct {
	ID, Name, Slug, Domains string
	Current                 bool // the superadmin is inside it
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	ts, err := h.rt.Deps.DB.Ent.Tenant.Query().Order(ent.Asc(tenant.FieldName)).All(r.Context())
	if err != nil {
		return err
	}
	var p page
	inside := app.Viewer(r).TenantID
	for _, t := range ts {
		p.Tenants = append(p.Tenants, tenantRow{ID: t.ID, Name: t.Name, Slug: t.Slug,
			Domains: strings.Join(t.EmailDomains, ", "), Current: t.ID == inside})
	}
	return app.Render(w, r, http.StatusOK, view(h.rt.Frame(r, "Tenants"), p))
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

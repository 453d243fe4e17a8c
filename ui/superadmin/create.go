package superadmin

import (
	"net/http"
	"strings"

	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
)

// tenantFields maps the domain's field names to the form's.
var tenantFields = adminkit.Shown("name", "slug", "emailDomains", "adminEmail", "adminName", "adminPassword")

// create makes a tenant with its first admin (tenancy.CreateTenant, as
// the createTenant mutation). Refused input comes back next to its field,
// and nothing is written.
func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "tenant", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	t, admin, err := h.rt.Deps.Tenancy.CreateTenant(r.Context(), tenancy.NewTenant{
		Name: f.Get("name"), Slug: f.Get("slug"), EmailDomains: domains(f.Get("emailDomains")),
		BudgetPolicy: tenant.BudgetPolicyStop,
		AdminEmail:   f.Get("adminEmail"), AdminName: f.Get("adminName"), AdminPassword: f.Values.Get("adminPassword"),
	})
	if err != nil {
		if err := f.Absorb(err, "name", tenantFields); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, f)
	}
	h.rt.Flash(r, "Tenant "+t.Name+" created; its admin "+admin.Email+" signs in with the password you set.")
	return app.SeeOther(w, r, "/superadmin")
}

// domains splits the email domains field: commas, spaces or lines.
func domains(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

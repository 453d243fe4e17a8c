// Package settings is the admin page of the tenant's settings: its name,
// email domains, whether every job must name a project, and what running
// jobs do when their payer runs out of tokens (tenancy.UpdateTenant, as the
// updateTenant mutation).
package settings

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the settings page, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/settings", app.Admin, h.show)
	rt.Handle("POST /admin/settings", app.Admin, h.save)
}

type handlers struct{ rt *app.Router }

var fields = map[string]string{
	"name": "name", "emailDomains": "emailDomains", "email_domains": "emailDomains",
	"requireProject": "requireProject", "budgetPolicy": "budgetPolicy", "budget_policy": "budgetPolicy",
}

var policies = []components.Option{
	{Value: string(tenant.BudgetPolicyStop), Label: "stop them at once"},
	{Value: string(tenant.BudgetPolicyFinish), Label: "let them finish (the balance goes negative)"},
}

func (h *handlers) show(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	t, err := h.rt.Deps.DB.Ent.Tenant.Get(ctx, viewer.FromContext(ctx).TenantID)
	if err != nil {
		return err
	}
	v := url.Values{"name": {t.Name}, "emailDomains": {strings.Join(t.EmailDomains, ", ")}, "budgetPolicy": {string(t.BudgetPolicy)}}
	if t.RequireProject {
		v.Set("requireProject", "on")
	}
	return h.render(w, r, http.StatusOK, adminkit.NewForm("settings", h.rt.CSRFToken(r), v))
}

func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form) error {
	return app.Render(w, r, status, view(h.rt.Frame(r, "Settings"), f))
}

func (h *handlers) save(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "settings", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	name, require, policy := f.Get("name"), f.Has("requireProject"), tenant.BudgetPolicy(f.Get("budgetPolicy"))
	var domains []string
	for _, d := range strings.FieldsFunc(f.Get("emailDomains"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		domains = append(domains, d)
	}
	if len(domains) == 0 {
		f.Add("emailDomains", "a tenant needs at least one email domain: it is how its users sign in")
	}
	if tenant.BudgetPolicyValidator(policy) != nil {
		f.Add("budgetPolicy", "choose stop or finish")
	}
	if f.Invalid() {
		return h.render(w, r, http.StatusBadRequest, f)
	}
	_, err = h.rt.Deps.Tenancy.UpdateTenant(r.Context(), ent.UpdateTenantInput{
		Name: &name, EmailDomains: domains, RequireProject: &require, BudgetPolicy: &policy,
	})
	if err != nil {
		if err := f.Absorb(err, "name", fields); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, f)
	}
	h.rt.Flash(r, "Settings saved.")
	return app.SeeOther(w, r, "/admin/settings")
}

package settings_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/settings"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestSettings(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, settings.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)
		admin.Get("/admin/settings").Want(t, http.StatusOK).Contains(t, `value="ACME"`, `value="acme.test"`, `<option value="STOP" selected>`)

		admin.Post("/admin/settings", url.Values{"name": {"Acme Labs"}, "emailDomains": {"acme.test, labs.acme.test"},
			"requireProject": {"on"}, "budgetPolicy": {"FINISH"}}).
			Want(t, http.StatusOK).Contains(t, "Settings saved.", `value="Acme Labs"`, "checked", `<option value="FINISH" selected>`)
		got := e.Ent.Tenant.GetX(sys, a.Ent.ID)
		if got.Name != "Acme Labs" || !got.RequireProject || got.BudgetPolicy != tenant.BudgetPolicyFinish || len(got.EmailDomains) != 2 {
			t.Fatalf("saved %+v", got)
		}

		for _, tc := range []struct {
			field string
			form  url.Values
		}{
			{"budgetPolicy", url.Values{"name": {"x"}, "emailDomains": {"acme.test"}, "budgetPolicy": {"PANIC"}}},
			{"emailDomains", url.Values{"name": {"x"}, "emailDomains": {"other.test"}, "budgetPolicy": {"STOP"}}},
			{"emailDomains", url.Values{"name": {"x"}, "emailDomains": {"not a_domain!"}, "budgetPolicy": {"STOP"}}},
			{"emailDomains", url.Values{"name": {"x"}, "emailDomains": {""}, "budgetPolicy": {"STOP"}}},
			{"name", url.Values{"name": {""}, "emailDomains": {"acme.test"}, "budgetPolicy": {"STOP"}}},
		} {
			admin.Post("/admin/settings", tc.form).Want(t, http.StatusBadRequest).Contains(t, `id="settings-`+tc.field+`-errors"`)
		}
		if got2 := e.Ent.Tenant.GetX(sys, a.Ent.ID); got2.Name != "Acme Labs" || got2.BudgetPolicy != tenant.BudgetPolicyFinish {
			t.Fatalf("refused input changed the tenant: %+v", got2)
		}

		member := e.SignIn(a.Member.Email)
		member.Get("/admin/settings").Want(t, http.StatusForbidden)
		member.Post("/admin/settings", url.Values{"name": {"pwned"}, "emailDomains": {"acme.test"}, "budgetPolicy": {"STOP"}}).Want(t, http.StatusForbidden)
		if e.Ent.Tenant.GetX(sys, a.Ent.ID).Name != "Acme Labs" || e.Ent.Tenant.GetX(sys, b.Ent.ID).Name != "OTHER" {
			t.Fatal("a member or another tenant changed settings")
		}
	})
}

package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// TestSuperadminCreatesTenant: from the tenant list a superadmin creates
// a tenant with its first admin, who then signs in; bad input comes back
// in words next to its field and writes nothing; tenant admins cannot
// create one. The list shows each tenant's running jobs, tokens spent in
// the last 30 days (debits only) and nodes.
func TestSuperadminCreatesTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		sys := viewer.SystemContext(context.Background())
		admin := e.viewerOf(adminEmail)
		j := e.submit(admin, "train", "sleep 60")
		if err := e.jobs.MarkRunning(context.Background(), j.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		for i, c := range []struct {
			tokens billing.Tokens
			at     time.Time
		}{{1500, time.Now()}, {-10000, time.Now()}, {700, time.Now().Add(-40 * 24 * time.Hour)}} {
			e.db.Ent.Charge.Create().SetTenantID(e.tenant.ID).SetKind(charge.KindCompute).SetPayerKind(charge.PayerKindUser).
				SetUserID(admin.UserID).SetTokens(c.tokens).SetCreatedAt(c.at).SetIdempotencyKey("usage-" + string(rune('a'+i))).
				ExecX(sys)
		}

		form := url.Values{"name": {"Bravo Labs"}, "slug": {"bravo"}, "emailDomains": {"bravo.test, labs.bravo.test"},
			"adminEmail": {"ada@bravo.test"}, "adminName": {"Ada"}, "adminPassword": {testPassword}}
		tenantAdmin := e.browser()
		tenantAdmin.signIn(adminEmail)
		_, page := tenantAdmin.get("/admin/users")
		asAdmin := url.Values{"csrf": {csrfRe.FindStringSubmatch(page)[1]}}
		for k, v := range form {
			asAdmin[k] = v
		}
		if res, body := tenantAdmin.post("/superadmin/tenants", asAdmin); res.StatusCode != http.StatusForbidden || strings.Contains(body, "form expired") {
			t.Errorf("a tenant admin creating a tenant: %d; want 403 for the role", res.StatusCode)
		}

		b := e.browser()
		b.signIn(superEmail)
		code, body := b.get("/superadmin")
		if code != http.StatusOK {
			t.Fatalf("GET /superadmin: %d", code)
		}
		// The token of the page the form is on, as the browser sends it.
		csrf := csrfRe.FindStringSubmatch(body)[1]
		form.Set("csrf", csrf)
		_, row, _ := strings.Cut(body, `id="tenant-row-`+e.tenant.Slug+`"`)
		row, _, _ = strings.Cut(row, "</tr>")
		for _, want := range []string{`class="num running">1<`, `class="num spent">` + billing.Tokens(1500).String() + `<`, `class="nodes">none<`} {
			if !strings.Contains(row, want) {
				t.Errorf("the row of %s lacks %s:\n%s", e.tenant.Slug, want, row)
			}
		}

		bad := url.Values{}
		for k, v := range form {
			bad[k] = v
		}
		bad.Set("slug", "Bravo Labs!")
		res, body := b.post("/superadmin/tenants", bad)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not a valid slug") || !strings.Contains(body, `value="Bravo Labs"`) {
			t.Errorf("a bad slug: %d; want 400 saying why, the form kept\n%s", res.StatusCode, body)
		}
		if strings.Contains(body, testPassword) {
			t.Error("the password was sent back")
		}
		if n := e.db.Ent.Tenant.Query().Where(tenant.Slug("bravo")).CountX(sys); n != 0 {
			t.Fatal("a refused creation wrote a tenant")
		}

		res, _ = b.post("/superadmin/tenants", form)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("creating the tenant: %d", res.StatusCode)
		}
		_, body = b.get("/superadmin")
		if !strings.Contains(body, "Tenant Bravo Labs created; its admin ada@bravo.test") || !strings.Contains(body, "bravo.test, labs.bravo.test") {
			t.Error("the list does not show the new tenant and the flash")
		}
		ada := e.browser()
		ada.signIn("ada@bravo.test")
		if code, _ := ada.get("/admin/users"); code != http.StatusOK {
			t.Errorf("the new tenant's admin on /admin/users: %d", code)
		}
	})
}

package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
)

// TestTokensCharts: the Tokens page draws spending per day by project,
// user and queue with the right totals: debits only (a grant is not
// spending), the member's own, never another tenant's; the filter applies.
func TestTokensCharts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		sys := viewer.SystemContext(context.Background())
		member := e.viewerOf(memberEmail)
		if _, err := (&ledger.Service{DB: e.db}).Grant(viewer.NewContext(context.Background(), e.admin),
			ledger.Payer{UserID: member.UserID}, 100*billing.Unit, "welcome"); err != nil {
			t.Fatal(err)
		}
		j := e.submit(e.admin, "billed", "true")
		mj := e.submit(member, "theirs", "true")
		n := 0
		add := func(tenant, user, jobID string, kind charge.Kind, tokens billing.Tokens) {
			t.Helper()
			n++
			c := e.db.Ent.Charge.Create().SetTenantID(tenant).SetPayerKind(charge.PayerKindUser).SetUserID(user).
				SetKind(kind).SetTokens(tokens).SetIdempotencyKey("chart:" + string(rune('a'+n)))
			if jobID != "" {
				c.SetJobID(jobID)
			}
			if err := c.Exec(sys); err != nil {
				t.Fatal(err)
			}
		}
		add(e.tenant.ID, e.admin.UserID, j.ID, charge.KindStart, 3*billing.Unit)
		add(e.tenant.ID, e.admin.UserID, j.ID, charge.KindCompute, 3*billing.Unit/2)
		add(e.tenant.ID, member.UserID, mj.ID, charge.KindCompute, 2*billing.Unit)
		add(e.other.TenantID, e.other.UserID, "", charge.KindStorage, 40*billing.Unit)

		total := func(body, id string) string {
			t.Helper()
			m := regexp.MustCompile(`<figure class="chart" id="` + id + `" data-total="([^"]*)"`).FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("no chart %s in the page", id)
			}
			return m[1]
		}
		a := e.browser()
		a.signIn(adminEmail)
		for _, tc := range []struct {
			who  *browser
			path string
			want string
		}{
			{a, "/tokens", "6.500"},
			{a, "/tokens?kind=COMPUTE", "3.500"},
			{a, "/tokens?from=2020-01-01&to=2020-01-31", "0.000"},
		} {
			code, body := tc.who.get(tc.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", tc.path, code)
			}
			for _, id := range []string{"spent-by-project", "spent-by-user", "spent-by-queue"} {
				if got := total(body, id); got != tc.want {
					t.Errorf("GET %s: %s total %s, want %s", tc.path, id, got, tc.want)
				}
			}
		}
		m := e.browser()
		m.signIn(memberEmail)
		_, body := m.get("/tokens")
		if got := total(body, "spent-by-user"); got != "2.000" {
			t.Errorf("member: total %s, want their own 2.000", got)
		}
		if !regexp.MustCompile(`<span class="series">member@levers9\.local</span> <span class="num">2\.000</span>`).MatchString(body) {
			t.Error("member: the legend does not name them with their total")
		}
		_, body = a.get("/tokens")
		if !regexp.MustCompile(`<span class="series">default</span> <span class="num">6\.500</span>`).MatchString(body) {
			t.Error("admin: the queue chart's legend lacks the default queue's total")
		}
	})
}

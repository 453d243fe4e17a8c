package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
)

// The Tokens page lists the charges the viewer may see, filtered, with
// totals and balances: members their own, admins the tenant's.
func TestDashboardTokens(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		ctx := viewer.NewContext(context.Background(), e.admin)
		sys := viewer.SystemContext(context.Background())
		member, err := e.db.Ent.User.Query().Where(user.Email(memberEmail)).Only(sys)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&ledger.Service{DB: e.db}).Grant(ctx, ledger.Payer{UserID: member.ID}, 100*billing.Unit, "welcome"); err != nil {
			t.Fatal(err)
		}
		j := e.submit(e.admin, "billed", "true")
		err = e.db.Ent.Charge.Create().SetTenantID(e.tenant.ID).SetPayerKind(charge.PayerKindUser).SetUserID(e.admin.UserID).
			SetJobID(j.ID).SetKind(charge.KindStart).SetTokens(3 * billing.Unit).SetIdempotencyKey("start:" + j.ID).Exec(sys)
		if err != nil {
			t.Fatal(err)
		}
		// Another tenant's charges never show.
		if _, err := (&ledger.Service{DB: e.db}).Grant(viewer.NewContext(context.Background(), e.other),
			ledger.Payer{UserID: e.other.UserID}, 7*billing.Unit, "other tenant grant"); err != nil {
			t.Fatal(err)
		}

		m := e.browser()
		m.signIn(memberEmail)
		code, body := m.get("/tokens")
		if code != http.StatusOK {
			t.Fatalf("member GET /tokens: %d", code)
		}
		// A grant is a credit, with a plus sign (it was shown as -100).
		for _, want := range []string{"welcome", "GRANT", "<td>CREDIT</td>", `<td class="num">+100.000</td>`} {
			if !strings.Contains(body, want) {
				t.Errorf("member's Tokens page lacks %q", want)
			}
		}
		if strings.Contains(body, "-100") || strings.Contains(body, "−100") {
			t.Error("member's Tokens page shows the grant as a negative number")
		}
		for _, unwanted := range []string{j.ID, "other tenant grant"} {
			if strings.Contains(body, unwanted) {
				t.Errorf("member's Tokens page shows %q", unwanted)
			}
		}
		if !strings.Contains(body, `<td class="num">100.000</td>`) {
			t.Error("member's balance of 100 is not shown")
		}

		a := e.browser()
		a.signIn(adminEmail)
		_, body = a.get("/tokens?kind=START")
		if !strings.Contains(body, j.ID) || strings.Contains(body, "welcome") {
			t.Errorf("admin's START filter: shows the job %v, shows the grant %v", strings.Contains(body, j.ID), strings.Contains(body, "welcome"))
		}
		_, body = a.get("/tokens?job=" + j.ID)
		if !strings.Contains(body, "START") || strings.Contains(body, "welcome") {
			t.Error("admin's job filter does not show exactly the job's charges")
		}
		if !strings.Contains(body, "<td>DEBIT</td>") || !strings.Contains(body, `<td class="num">−3.000</td>`) {
			t.Error("the job's start fee is not shown as a debit of −3.000")
		}
		// The job by its name, in the table and in the totals by job.
		if !strings.Contains(body, `<a href="/jobs/`+j.ID+`">billed</a>`) || strings.Count(body, ">billed<") < 2 {
			t.Errorf("the job is not named %q in the charges and the totals", "billed")
		}
		_, body = a.get("/tokens")
		if strings.Contains(body, "other tenant grant") {
			t.Error("the admin sees another tenant's charge")
		}
		for _, bad := range []string{"/tokens?from=yesterday", "/tokens?kind=FREE", "/tokens?project=nope"} {
			if code, _ := a.get(bad); code != http.StatusBadRequest {
				t.Errorf("GET %s: %d; want 400", bad, code)
			}
		}
	})
}

package ledger_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
)

// BenchmarkBalance measures reading a payer's balance, as every priced
// submission and every minute of the meter do, for a payer with one
// charge and for one with 20,000 (a few months of a busy user's jobs).
// Beside it, same run: summing the payer's charges, as the ledger did
// before balances were kept, which grows with the payer's history.
func BenchmarkBalance(b *testing.B) {
	const history, runs = 20000, 300
	for _, dialect := range dbtest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			tn := fixture.New(b, dbtest.URL(b, dialect), fixture.TenantOptions{Slug: "alpha"})
			p := ledger.Payer{TenantID: tn.ID, UserID: tn.Admin.ID}
			tn.Grant(b, ledger.Payer{UserID: p.UserID}, 1000*billing.Unit)
			ctx := fixture.Sys()
			read := func() error { _, err := ledger.BalanceOf(ctx, tn.DB.Ent, p); return err }
			sum := func() error {
				var s int64
				return tn.DB.SQL.QueryRow("SELECT coalesce(sum(tokens), 0) FROM charges WHERE tenant_id = $1 AND payer_kind = 'USER' AND user_id = $2", p.TenantID, p.UserID).Scan(&s)
			}
			// Each is measured on its own: right after a sum of thousands of
			// rows the next read finds the caches cold. The first of two
			// measurements warms them.
			measure := func(f func() error) time.Duration {
				var d time.Duration
				for range 2 {
					start := time.Now()
					for range runs {
						if err := f(); err != nil {
							b.Fatal(err)
						}
					}
					d = time.Since(start) / runs
				}
				return d
			}
			freshB, freshS := measure(read), measure(sum)
			for chunk := range slices.Chunk(make([]int, history), 1000) {
				bulk := make([]*ent.ChargeCreate, len(chunk))
				for i := range bulk {
					bulk[i] = tn.DB.Ent.Charge.Create().SetTenantID(p.TenantID).SetPayerKind(charge.PayerKindUser).
						SetUserID(p.UserID).SetKind(charge.KindCompute).SetTokens(billing.Unit / 100).
						SetIdempotencyKey(fmt.Sprintf("bench:%d:%d", len(bulk), time.Now().UnixNano()+int64(i)))
				}
				if err := tn.DB.Ent.Charge.CreateBulk(bulk...).Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if dialect == "postgres" { // as autovacuum soon does after so many writes
				if _, err := tn.DB.SQL.Exec("VACUUM ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			oldB, oldS := measure(read), measure(sum)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(oldB.Microseconds()), "us/balance(20000-charges)")
			b.ReportMetric(float64(freshB.Microseconds()), "us/balance(1-charge)")
			b.ReportMetric(float64(oldS.Microseconds()), "us/sum-of-charges(20000-charges)")
			b.ReportMetric(float64(freshS.Microseconds()), "us/sum-of-charges(1-charge)")
		})
	}
}

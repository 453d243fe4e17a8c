package dbstate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metrics/dbstate"
)

const (
	benchActive  = 1000    // pending jobs
	benchHistory = 200_000 // ended jobs beside them
)

// BenchmarkScrape is one collection of the database state with
// benchActive pending jobs among benchHistory ended ones, the shape of a
// server that has run for a while: a scrape must cost what is active, not
// the history. The baseline, same run: one COUNT(*) over the jobs table,
// the cost of reading the whole history once.
func BenchmarkScrape(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			tn := fixture.New(b, dbtest.URL(b, d), fixture.TenantOptions{Slug: "bench"})
			tn.Grant(b, ledger.Payer{TenantID: tn.ID, UserID: tn.Admin.ID}, 1_000_000*billing.Unit)
			js := fixture.Jobs(tn.DB, nil)
			for range benchActive {
				tn.Submit(b, js, nil, fixture.Service(1, 64))
			}
			seedHistory(b, tn, benchHistory/benchActive)
			c := dbstate.New(tn.DB, fixture.Log(), dbstate.Config{})
			var scrape, count time.Duration
			for b.Loop() {
				start := time.Now()
				got, err := gather(c)
				scrape += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if want := fmt.Sprintf("queue:default,state:PENDING=%d", benchActive); len(got["levers9_jobs"]) != 1 || got["levers9_jobs"][0] != want {
					b.Fatalf("levers9_jobs = %v, want %s", got["levers9_jobs"], want)
				}
				start = time.Now()
				var n int
				if err := tn.DB.SQL.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM jobs").Scan(&n); err != nil {
					b.Fatal(err)
				}
				count += time.Since(start)
				if n != benchActive+benchHistory {
					b.Fatalf("%d jobs, want %d", n, benchActive+benchHistory)
				}
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(scrape.Milliseconds())/float64(b.N), "scrape-ms")
			b.ReportMetric(float64(count.Milliseconds())/float64(b.N), "base-count-ms")
		})
	}
}

// seedHistory copies every job copies times as an ended one, in SQL: a
// history this size through the API would take minutes.
func seedHistory(b *testing.B, tn *fixture.Tenant, copies int) {
	b.Helper()
	cols := strings.Join(job.Columns, ", ")
	sel := make([]string, len(job.Columns))
	for i, c := range job.Columns {
		switch c {
		case job.FieldID:
			sel[i] = "j.id || '_' || CAST(n.i AS TEXT)"
		case job.FieldStatus:
			sel[i] = "'COMPLETE'"
		case job.FieldMeteringClosed:
			sel[i] = "TRUE"
		case job.FieldIdempotencyKey:
			sel[i] = "NULL"
		default:
			sel[i] = "j." + c
		}
	}
	series := fmt.Sprintf("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) ", copies)
	if tn.DB.Dialect == dialect.Postgres {
		series = fmt.Sprintf("WITH n(i) AS (SELECT generate_series(1, %d)) ", copies)
	}
	q := series + fmt.Sprintf("INSERT INTO jobs (%s) SELECT %s FROM jobs j CROSS JOIN n", cols, strings.Join(sel, ", "))
	if _, err := tn.DB.SQL.ExecContext(context.Background(), q); err != nil {
		b.Fatalf("seeding the history: %v", err)
	}
	if tn.DB.Dialect == dialect.Postgres {
		if _, err := tn.DB.SQL.ExecContext(context.Background(), "ANALYZE jobs"); err != nil {
			b.Fatal(err)
		}
	}
}

package tokens

import (
	"context"
	"math"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/ui/charts"
)

// ChartDays is how many days the spending charts show unless the filter's
// dates say otherwise.
const ChartDays = 14

// maxSeries is how many keys a chart shows by name; the rest are summed as
// "others" (more colours than that do not read).
const maxSeries = 7

// chartWindow is the first day and the number of days the charts show: the
// filter's From to To, else the ChartDays up to To or today, at most
// ledger.MaxDays. Unreadable dates were refused by the filter already.
func chartWindow(f filter, now time.Time) (time.Time, int) {
	end := now.UTC().Truncate(24 * time.Hour)
	if t, err := time.Parse(dateLayout, f.To); err == nil {
		end = t
	}
	start := end.AddDate(0, 0, 1-ChartDays)
	if t, err := time.Parse(dateLayout, f.From); err == nil && !t.After(end) {
		start = t
	}
	days := int(end.Sub(start).Hours()/24) + 1
	if days > ledger.MaxDays {
		start, days = end.AddDate(0, 0, 1-ledger.MaxDays), ledger.MaxDays
	}
	return start, days
}

// spendingCharts draws what the charges base selects spent per day by
// project, user and queue: one grouped query each. names maps project and
// user IDs to names; queues maps queue IDs to names.
func (h *handlers) spendingCharts(ctx context.Context, base *ent.ChargeQuery, f filter, names, queues map[string]string) ([]charts.Bars, error) {
	from, days := chartWindow(f, time.Now())
	var out []charts.Bars
	for _, g := range []struct {
		id, title, none string
		by              ledger.Grouping
		names           map[string]string
	}{
		{"spent-by-project", "Spent per day by project", "no project", ledger.ByProject, names},
		{"spent-by-user", "Spent per day by user", "no user", ledger.ByUser, names},
		{"spent-by-queue", "Spent per day by queue", "no queue (storage)", ledger.ByQueue, queues},
	} {
		d, err := h.rt.Deps.Ledger.Daily(ctx, base.Clone(), g.by, from, days)
		if err != nil {
			return nil, err
		}
		b := charts.Bars{ID: g.id, Title: g.title, Unit: "tokens", Format: tokens,
			Note: "Debits only (grants are not spending); days in UTC."}
		for _, day := range d.Days {
			t, _ := time.Parse(database.DayLayout, day)
			b.Categories = append(b.Categories, t.Format("Jan 2"))
		}
		for i, sr := range d.Series {
			if i == maxSeries && len(d.Series) > maxSeries+1 {
				b.Series = append(b.Series, charts.Series{Name: "others", Values: make([]float64, days)})
			}
			if i >= maxSeries && len(d.Series) > maxSeries+1 {
				for k, v := range sr.Tokens {
					b.Series[maxSeries].Values[k] += v.Float()
				}
				continue
			}
			name := g.none
			if sr.Key != "" {
				name = nameOf(g.names, sr.Key)
			}
			s := charts.Series{Name: name}
			for _, v := range sr.Tokens {
				s.Values = append(s.Values, v.Float())
			}
			b.Series = append(b.Series, s)
		}
		out = append(out, b)
	}
	return out, nil
}

// tokens formats an amount of tokens drawn on a chart as the ledger does.
func tokens(v float64) string {
	return ledger.Plain(billing.Tokens(math.Round(v * float64(billing.Unit))))
}

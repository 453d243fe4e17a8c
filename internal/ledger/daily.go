package ledger

import (
	"context"
	"fmt"
	"sort"
	"time"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
)

// ByQueue groups charges by the queue of their job (Daily only: a charge
// has no queue of its own).
const ByQueue Grouping = "QUEUE"

// MaxDays bounds Daily's window.
const MaxDays = 92

// Daily is spending per day (UTC) and per key of a grouping.
type Daily struct {
	// Days are every day of the window, oldest first (DayLayout).
	Days []string
	// Series are the keys, most spent first; Tokens has one amount per
	// day. The key is "" for charges without one (storage has no job,
	// hence no queue).
	Series []DailySeries
}

// DailySeries is one key's spending per day.
type DailySeries struct {
	Key    string
	Tokens []billing.Tokens
	Total  billing.Tokens
}

// Daily sums what the charges q selects spent (debits: what jobs and
// storage cost; grants and refunds are not spending) per UTC day from the
// day of from, for days days, and per g (ByProject, ByUser or ByQueue).
// It is one query, grouped in the database; privacy applies to q as to
// any read (members see their own charges).
func (s *Service) Daily(ctx context.Context, q *ent.ChargeQuery, g Grouping, from time.Time, days int) (*Daily, error) {
	if days < 1 || days > MaxDays {
		return nil, fmt.Errorf("a daily window is 1 to %d days, not %d", MaxDays, days)
	}
	start := from.UTC().Truncate(24 * time.Hour)
	end := start.AddDate(0, 0, days)
	out := &Daily{}
	index := map[string]int{}
	for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
		index[d.Format(database.DayLayout)] = len(out.Days)
		out.Days = append(out.Days, d.Format(database.DayLayout))
	}
	key, err := dailyKey(g)
	if err != nil {
		return nil, err
	}
	// GroupBy takes fields only: the day and the key are expressions, so
	// the aggregate that selects them also adds them to the grouping. Kind
	// is grouped too (a field is required); kinds are summed here.
	var rows []struct {
		Kind   string  `json:"kind"`
		Day    string  `json:"day"`
		Key    *string `json:"key"`
		Tokens *int64  `json:"tokens"`
	}
	dialect := s.DB.Dialect
	err = q.Where(charge.CreatedAtGTE(start), charge.CreatedAtLT(end), charge.TokensGT(0)).
		GroupBy(charge.FieldKind).
		Aggregate(
			func(sel *entsql.Selector) string {
				day := database.DayOf(dialect, sel.C(charge.FieldCreatedAt))
				sel.GroupBy(day)
				return entsql.As(day, "day")
			},
			func(sel *entsql.Selector) string {
				k := key(sel)
				sel.GroupBy(k)
				return entsql.As(k, "key")
			},
			ent.As(ent.Sum(charge.FieldTokens), "tokens"),
		).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("summing spending per day by %s: %w", g, err)
	}
	series := map[string]*DailySeries{}
	for _, r := range rows {
		i, ok := index[r.Day]
		if !ok || r.Tokens == nil {
			continue
		}
		k := ""
		if r.Key != nil {
			k = *r.Key
		}
		sr := series[k]
		if sr == nil {
			sr = &DailySeries{Key: k, Tokens: make([]billing.Tokens, days)}
			series[k] = sr
		}
		sr.Tokens[i] += billing.Tokens(*r.Tokens)
		sr.Total += billing.Tokens(*r.Tokens)
	}
	for _, sr := range series {
		out.Series = append(out.Series, *sr)
	}
	sort.Slice(out.Series, func(i, j int) bool {
		a, b := out.Series[i], out.Series[j]
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Key < b.Key
	})
	return out, nil
}

// dailyKey is the expression of g's key in a charges selector; a queue
// is its job's (a join: a charge's job is in its tenant, and the charge is
// what privacy let the viewer read).
func dailyKey(g Grouping) (func(*entsql.Selector) string, error) {
	switch g {
	case ByProject:
		return func(s *entsql.Selector) string { return s.C(charge.FieldProjectID) }, nil
	case ByUser:
		return func(s *entsql.Selector) string { return s.C(charge.FieldUserID) }, nil
	case ByQueue:
		return func(s *entsql.Selector) string {
			t := entsql.Table(job.Table)
			s.LeftJoin(t).On(s.C(charge.FieldJobID), t.C(job.FieldID))
			return t.C(job.FieldQueueID)
		}, nil
	}
	return nil, fmt.Errorf("no daily spending by %q", g)
}

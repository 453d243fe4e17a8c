package ledger

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
)

// Grouping is what Totals groups charges by.
type Grouping string

// The groupings.
const (
	ByJob     Grouping = "JOB"
	ByProject Grouping = "PROJECT"
	ByUser    Grouping = "USER"
	ByKind    Grouping = "KIND"
)

var groupColumns = map[Grouping]string{
	ByJob: charge.FieldJobID, ByProject: charge.FieldProjectID,
	ByUser: charge.FieldUserID, ByKind: charge.FieldKind,
}

// Total is the sum of a group of charges.
type Total struct {
	Key    string         `json:"key"`
	Tokens billing.Tokens `json:"tokens"`
	Count  int            `json:"count"`
}

// Totals sums the charges q selects (privacy applies: members see their
// own) by g, largest first. Charges without the grouping key (a grant has
// no job) are left out.
func Totals(ctx context.Context, q *ent.ChargeQuery, g Grouping) ([]*Total, error) {
	col, ok := groupColumns[g]
	if !ok {
		return nil, fmt.Errorf("unknown grouping %q", g)
	}
	// Rows are scanned by column name; one of the keys is set.
	var rows []struct {
		JobID     *string `json:"job_id"`
		ProjectID *string `json:"project_id"`
		UserID    *string `json:"user_id"`
		Kind      *string `json:"kind"`
		Tokens    *int64  `json:"tokens"`
		Count     int     `json:"count"`
	}
	err := q.GroupBy(col).
		Aggregate(ent.As(ent.Sum(charge.FieldTokens), "tokens"), ent.As(ent.Count(), "count")).
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("summing charges by %s: %w", g, err)
	}
	out := make([]*Total, 0, len(rows))
	for _, r := range rows {
		key := map[Grouping]*string{ByJob: r.JobID, ByProject: r.ProjectID, ByUser: r.UserID, ByKind: r.Kind}[g]
		if key == nil || *key == "" {
			continue
		}
		t := &Total{Key: *key, Count: r.Count}
		if r.Tokens != nil {
			t.Tokens = billing.Tokens(*r.Tokens)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tokens != out[j].Tokens {
			return out[i].Tokens > out[j].Tokens
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

// IsValid reports whether g is a known grouping.
func (g Grouping) IsValid() bool { _, ok := groupColumns[g]; return ok }

// MarshalGQL writes g as a GraphQL enum value.
func (g Grouping) MarshalGQL(w io.Writer) { _, _ = io.WriteString(w, strconv.Quote(string(g))) }

// UnmarshalGQL reads a GraphQL enum value.
func (g *Grouping) UnmarshalGQL(v any) error {
	s, ok := v.(string)
	if !ok || !Grouping(s).IsValid() {
		return fmt.Errorf("%v is not a valid ChargeGrouping", v)
	}
	*g = Grouping(s)
	return nil
}

package database_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/contrib/entgql"
	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// sortable is the text every time is stored as on SQLite, in UTC.
const sortable = "2006-01-02 15:04:05.999999999-07:00"

var sortableUTC = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d*[1-9])?\+00:00$`)

// Rows written before times were stored in the sortable format (as Go's
// time.String(), with zone names and monotonic readings, in any zone) are
// rewritten by Migrate, once, and then page, compare and read correctly.
func TestMigrateLegacyTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sys := viewer.SystemContext(ctx)
	db := open(t, dbtest.SQLiteURL(t))
	migrate(t, db)

	// 30 tenants on 7 instants (ties), written in the legacy forms.
	base := time.Now().Add(-time.Hour) // with a monotonic reading
	cet := time.FixedZone("CET", 3600)
	legacy := []func(time.Time) string{
		func(t time.Time) string { return t.String() },                                 // UTC with "m=+…"
		func(t time.Time) string { return t.Round(0).String() },                        // UTC without it
		func(t time.Time) string { return t.In(cet).Round(0).String() },                // another zone
		func(t time.Time) string { return t.In(time.FixedZone("", -5*3600)).String() }, // unnamed zone
	}
	want := map[string]time.Time{}
	for i := range 30 {
		at := base.Add(time.Duration(i%7) * 1500 * time.Microsecond)
		if i%7 == 6 {
			at = at.Truncate(time.Millisecond) // a fraction with trailing zeros
		}
		tn := db.Ent.Tenant.Create().SetName(fmt.Sprint("T", i)).SetSlug(fmt.Sprint("t", i)).SaveX(sys)
		_, err := db.SQL.ExecContext(ctx, "UPDATE tenants SET created_at = ?, updated_at = ? WHERE id = ?",
			legacy[i%len(legacy)](at), legacy[(i+1)%len(legacy)](at), tn.ID)
		if err != nil {
			t.Fatal(err)
		}
		want[tn.ID] = at
	}

	// More rows of another zone than one batch rewrites.
	const events = 1203
	for i := range events {
		at := base.Add(time.Duration(i) * time.Second).In(cet)
		if _, err := db.SQL.ExecContext(ctx, `INSERT INTO audit_events (id, created_at, updated_at, actor_id, action, target)
			VALUES (?, ?, ?, 'usr_1', 'test', '')`, fmt.Sprint("aud_", i), at.String(), at.UTC().String()); err != nil {
			t.Fatal(err)
		}
	}
	// A database of a version before the sortable format.
	if _, err := db.SQL.ExecContext(ctx, "PRAGMA user_version = 0"); err != nil {
		t.Fatal(err)
	}
	migrate(t, db)
	check := func() {
		t.Helper()
		rows, err := db.SQL.QueryContext(ctx, "SELECT id, CAST(created_at AS TEXT), CAST(updated_at AS TEXT) FROM tenants")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, c, u string
			if err := rows.Scan(&id, &c, &u); err != nil {
				t.Fatal(err)
			}
			w := want[id].UTC().Format(sortable)
			if c != w || u != w {
				t.Errorf("tenant %s stored %q and %q, want %q", id, c, u, w)
			}
		}
	}
	check()
	migrate(t, db) // again: nothing left to rewrite, nothing changes
	check()
	var legacyLeft, events0 int
	if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE created_at LIKE '% % %' OR updated_at LIKE '% % %'").Scan(&legacyLeft); err != nil || legacyLeft != 0 {
		t.Errorf("%d audit events left in the legacy form (%v)", legacyLeft, err)
	}
	if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE created_at = updated_at AND created_at = ?", base).Scan(&events0); err != nil || events0 != 1 {
		t.Errorf("%d audit events at %v, want 1 (%v)", events0, base, err)
	}

	for _, tn := range db.Ent.Tenant.Query().AllX(sys) {
		if !tn.CreatedAt.Equal(want[tn.ID]) || tn.CreatedAt.Location() != time.UTC {
			t.Errorf("tenant %s reads back as %v, want %v in UTC", tn.ID, tn.CreatedAt, want[tn.ID])
		}
	}
	checkPaging(t, db)

	// Comparisons in SQL see instants, and SQLite's date functions read the text.
	cut := base.Add(3 * 1500 * time.Microsecond)
	var before int
	for _, at := range want {
		if at.Before(cut) {
			before++
		}
	}
	if n := db.Ent.Tenant.Query().Where(tenant.CreatedAtLT(cut.In(time.FixedZone("X", 7200)))).CountX(sys); n != before {
		t.Errorf("%d tenants created before %v, want %d", n, cut, before)
	}
	var unread int
	if err := db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM tenants WHERE julianday(created_at) IS NULL").Scan(&unread); err != nil || unread != 0 {
		t.Errorf("SQLite cannot read %d stored times (%v)", unread, err)
	}
}

// New rows are written in the sortable format, in UTC whatever the
// zone of the time written, so pages never repeat or skip a row.
func TestPagingWithTies(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		sys := viewer.SystemContext(context.Background())
		db := open(t, url)
		migrate(t, db)
		base := time.Now()
		zones := []*time.Location{time.UTC, time.Local, time.FixedZone("CET", 3600), time.FixedZone("", -7*3600)}
		for i := range 23 {
			at := base.Add(time.Duration(i%5) * time.Millisecond).In(zones[i%len(zones)])
			db.Ent.Tenant.Create().SetName(fmt.Sprint("T", i%4)).SetSlug(fmt.Sprint("t", i)).SetCreatedAt(at).SaveX(sys)
		}
		db.Ent.Tenant.Create().SetName("now").SetSlug("now").SaveX(sys) // the default clock
		if db.Dialect == dialect.SQLite {
			rows, err := db.SQL.Query("SELECT CAST(created_at AS TEXT), CAST(updated_at AS TEXT) FROM tenants")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var c, u string
				if err := rows.Scan(&c, &u); err != nil {
					t.Fatal(err)
				}
				for _, s := range []string{c, u} {
					if !sortableUTC.MatchString(s) {
						t.Errorf("stored time %q is not UTC in the sortable format", s)
					}
				}
			}
			rows.Close()
		}
		checkPaging(t, db)
	})
}

// checkPaging pages the tenants of db by each order, both ways, in pages
// of several sizes, and checks every page set holds each row once, in order.
func checkPaging(t *testing.T, db *database.DB) {
	t.Helper()
	sys := viewer.SystemContext(context.Background())
	all := db.Ent.Tenant.Query().AllX(sys)
	for _, field := range []*ent.TenantOrderField{ent.TenantOrderFieldCreatedAt, ent.TenantOrderFieldName, ent.TenantOrderFieldID} {
		for _, dir := range []entgql.OrderDirection{entgql.OrderDirectionAsc, entgql.OrderDirectionDesc} {
			order := &ent.TenantOrder{Field: field, Direction: dir}
			want := slices.Clone(all)
			slices.SortFunc(want, func(a, b *ent.Tenant) int {
				c := compareBy(field, a, b)
				if c == 0 {
					c = strings.Compare(a.ID, b.ID)
				}
				if dir == entgql.OrderDirectionDesc {
					c = -c
				}
				return c
			})
			wantIDs := ids(want)
			for _, size := range []int{1, 4, 7, len(all)} {
				name := fmt.Sprintf("%s %s by %d", field, dir, size)
				if got := pageForward(t, db, order, size); !slices.Equal(got, wantIDs) {
					t.Errorf("%s forward: %d rows %v, want %d %v", name, len(got), got, len(wantIDs), wantIDs)
				}
				if got := pageBackward(t, db, order, size); !slices.Equal(got, wantIDs) {
					t.Errorf("%s backward: %d rows %v, want %d %v", name, len(got), got, len(wantIDs), wantIDs)
				}
			}
		}
	}
}

func compareBy(field *ent.TenantOrderField, a, b *ent.Tenant) int {
	switch field {
	case ent.TenantOrderFieldCreatedAt:
		return a.CreatedAt.Compare(b.CreatedAt)
	case ent.TenantOrderFieldName:
		return strings.Compare(a.Name, b.Name)
	default:
		return strings.Compare(a.ID, b.ID)
	}
}

func ids(ts []*ent.Tenant) []string {
	out := make([]string, len(ts))
	for i, tn := range ts {
		out[i] = tn.ID
	}
	return out
}

// pageForward reads all pages with first/after, passing each cursor
// through its GraphQL text as a client would.
func pageForward(t *testing.T, db *database.DB, order *ent.TenantOrder, size int) []string {
	t.Helper()
	sys := viewer.SystemContext(context.Background())
	var got []string
	var after *ent.Cursor
	for range 100 {
		c, err := db.Ent.Tenant.Query().Paginate(sys, after, &size, nil, nil, ent.WithTenantOrder(order))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Edges {
			got = append(got, e.Node.ID)
		}
		if !c.PageInfo.HasNextPage {
			return got
		}
		after = roundTrip(t, c.PageInfo.EndCursor)
	}
	t.Fatalf("paging forward did not end: %v", got)
	return nil
}

// pageBackward reads all pages with last/before, from the end.
func pageBackward(t *testing.T, db *database.DB, order *ent.TenantOrder, size int) []string {
	t.Helper()
	sys := viewer.SystemContext(context.Background())
	var got []string
	var before *ent.Cursor
	for range 100 {
		c, err := db.Ent.Tenant.Query().Paginate(sys, nil, nil, before, &size, ent.WithTenantOrder(order))
		if err != nil {
			t.Fatal(err)
		}
		page := make([]string, len(c.Edges))
		for i, e := range c.Edges {
			page[i] = e.Node.ID
		}
		got = append(page, got...)
		if !c.PageInfo.HasPreviousPage {
			return got
		}
		before = roundTrip(t, c.PageInfo.StartCursor)
	}
	t.Fatalf("paging backward did not end: %v", got)
	return nil
}

func roundTrip(t *testing.T, c *ent.Cursor) *ent.Cursor {
	t.Helper()
	var b bytes.Buffer
	c.MarshalGQL(&b)
	var out ent.Cursor
	if err := out.UnmarshalGQL(strings.Trim(b.String(), `"`)); err != nil {
		t.Fatal(err)
	}
	return &out
}

func migrate(t *testing.T, db *database.DB) {
	t.Helper()
	ctx := context.Background()
	if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
		t.Fatal(err)
	}
}

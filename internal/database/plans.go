package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/internal/ids"
)

// What the plan checks below are for: a statement a job runs must find its
// rows through an index that narrows them to the job's, or each job costs
// more than the one before (on a node with a year of history, seconds).
// A small test database never shows such a plan in time, so tests run a
// flow, then read the plans of every statement it ran (Mark, HistoryReads).

// historyTables grow with every job the server has run.
var historyTables = []string{
	"jobs", "services", "job_events", "charges", "log_lines", "audit_events",
	"executions", "tasks", "containers", "apps", "river_job",
}

// gatheringColumns name an owner that collects rows for as long as it
// lives: an index range on these alone reads all its history.
var gatheringColumns = []string{
	"tenant_id", "environment_id", "node_id", "queue_id", "owner_id", "project_id", "user_id",
}

// Mark starts a record of the statements run on SQLite's connection from
// now on; since lists them (their texts, most recently used first, as the
// statement cache keeps them: up to its bound). On PostgreSQL since lists
// none.
func (db *DB) Mark(ctx context.Context) (since func(context.Context) ([]string, error), err error) {
	if db.Dialect != dialect.SQLite {
		return func(context.Context) ([]string, error) { return nil, nil }, nil
	}
	// The statement after which the record starts: unique, so a later mark
	// does not move it.
	marker := "SELECT '" + ids.New("mark") + "'"
	if _, err := db.SQL.ExecContext(ctx, marker); err != nil {
		return nil, fmt.Errorf("marking statements: %w", err)
	}
	return func(ctx context.Context) ([]string, error) {
		all, err := db.statements(ctx)
		if err != nil {
			return nil, err
		}
		end := slices.Index(all, marker)
		if end < 0 {
			return nil, errors.New("listing statements: more ran since the mark than the cache keeps")
		}
		return all[:end], nil
	}, nil
}

// statements lists the statements the connection keeps prepared, most
// recently used first.
func (db *DB) statements(ctx context.Context) ([]string, error) {
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing statements: %w", err)
	}
	defer conn.Close()
	var out []string
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*cachedConn)
		if !ok {
			return fmt.Errorf("the connection (%T) keeps no statements", dc)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for e := c.lru.Front(); e != nil; e = e.Next() {
			out = append(out, e.Value.(*cachedStmt).query)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing statements: %w", err)
	}
	return out, nil
}

// searchStep is a step of EXPLAIN QUERY PLAN that reads a table: "SCAN t"
// (whole, through a covering index or not) or "SEARCH t USING ... (a=?
// AND b>?)".
var searchStep = regexp.MustCompile(`^(SCAN|SEARCH) (\S+)(?: USING .*?)?(?: \((.*)\))?$`)

// constrained is a column a SEARCH step's constraint holds equal to a
// value; a range (a>?) narrows nothing by itself: id>? reads every row
// after a cursor, the whole table on a first page.
var constrained = regexp.MustCompile(`(\w+)(?:=)`)

// aliased is a table given an alias in a query's FROM or JOIN.
var aliased = regexp.MustCompile("(?i)(?:FROM|JOIN)\\s+[`\"]?(\\w+)[`\"]?\\s+(?:AS\\s+)?[`\"]?(\\w+)")

// HistoryReads returns the steps of SQLite's plan for query that read a
// history table's rows in numbers that grow with the server's history:
// the whole table, or an index range that no equality narrows but on an
// owner's key (gatheringColumns). query is a statement that reads or writes
// rows; its parameters need no values, as plans do not depend on them.
func (db *DB) HistoryReads(ctx context.Context, query string) ([]string, error) {
	steps, err := db.Plan(ctx, query)
	if err != nil {
		return nil, err
	}
	tables := map[string]string{} // plans name tables by their alias
	for _, m := range aliased.FindAllStringSubmatch(query, -1) {
		tables[m[2]] = m[1]
	}
	var reads []string
	for _, detail := range steps {
		m := searchStep.FindStringSubmatch(detail)
		if m == nil {
			continue
		}
		if t, ok := tables[m[2]]; ok {
			m[2] = t
		}
		if !slices.Contains(historyTables, m[2]) {
			continue
		}
		narrowed := false
		for _, c := range constrained.FindAllStringSubmatch(m[3], -1) {
			narrowed = narrowed || !slices.Contains(gatheringColumns, c[1])
		}
		if m[1] == "SCAN" || !narrowed {
			reads = append(reads, detail)
		}
	}
	return reads, nil
}

// Plan returns the steps of SQLite's plan for query (EXPLAIN QUERY
// PLAN's details, in order); its parameters need no values.
func (db *DB) Plan(ctx context.Context, query string) ([]string, error) {
	if db.Dialect != dialect.SQLite {
		return nil, errors.New("query plans are read on SQLite only")
	}
	rows, err := db.explain(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, fmt.Errorf("explaining %q: %w", query, err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("explaining %q: %w", query, err)
	}
	return steps, nil
}

func (db *DB) explain(ctx context.Context, query string) (*sql.Rows, error) {
	var args []any
	for {
		rows, err := db.SQL.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
		if err == nil {
			return rows, nil
		}
		msg, n := err.Error(), 0
		if _, serr := fmt.Sscanf(msg, "missing argument with index %d", &n); serr != nil {
			_, _ = fmt.Sscanf(strings.TrimPrefix(msg, `missing named argument "`), "%d", &n)
		}
		if n <= len(args) || n > 1000 {
			return nil, fmt.Errorf("explaining %q: %w", query, err)
		}
		args = make([]any, n)
	}
}

package graph

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/graph/model"
	"github.com/levers9/levers9/internal/functions"
)

// opLoader remembers what one operation loaded for the fields of apps and
// functions (their app, versions, task counts), so that a list of them
// costs one query per kind, not one per row and field.
type opLoader struct {
	mu  sync.Mutex
	got map[string]any
}

type opLoaderKey struct{}

// withOpLoader gives one operation its loader.
func withOpLoader(ctx context.Context) context.Context {
	return context.WithValue(ctx, opLoaderKey{}, &opLoader{got: map[string]any{}})
}

// loadBatched is kind's value for id. The first row that asks loads it for
// every key more returns (the rows around it in the response); later rows
// find theirs ready. Keys load returns nothing for get the zero value.
func loadBatched[T any](ctx context.Context, kind, id string, more func() []string,
	load func(ctx context.Context, ids []string) (map[string]T, error)) (T, error) {
	l, _ := ctx.Value(opLoaderKey{}).(*opLoader)
	if l == nil {
		m, err := load(ctx, []string{id})
		return m[id], err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.got[kind+"\x00"+id]; ok {
		return v.(T), nil
	}
	batch := []string{id}
	for _, s := range more() {
		if _, ok := l.got[kind+"\x00"+s]; !ok && !slices.Contains(batch, s) {
			batch = append(batch, s)
		}
	}
	m, err := load(ctx, batch)
	if err != nil {
		var zero T
		return zero, err
	}
	for _, k := range batch {
		l.got[kind+"\x00"+k] = m[k]
	}
	return m[id], nil
}

// ancestorApps are the apps of the lists (and the app) above the field
// being resolved.
func ancestorApps(ctx context.Context) []*ent.App {
	var out []*ent.App
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		switch v := fc.Result.(type) {
		case *ent.App:
			if v != nil {
				out = append(out, v)
			}
		case []*ent.App:
			out = append(out, v...)
		case *ent.AppConnection:
			if v != nil {
				out = appendEdgeApps(out, v.Edges)
			}
		case []*ent.AppEdge:
			out = appendEdgeApps(out, v)
		}
	}
	return out
}

func appendEdgeApps(out []*ent.App, es []*ent.AppEdge) []*ent.App {
	for _, e := range es {
		if e != nil && e.Node != nil {
			out = append(out, e.Node)
		}
	}
	return out
}

// nearbyAppIDs are the apps of f's neighbours in the response: the apps
// above it and those of the functions listed with it.
func nearbyAppIDs(ctx context.Context) []string {
	var out []string
	for _, a := range ancestorApps(ctx) {
		out = append(out, a.ID)
	}
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		switch v := fc.Result.(type) {
		case []*ent.Function:
			for _, f := range v {
				out = append(out, f.AppID)
			}
		case []*model.AppVersion:
			for _, ver := range v {
				for _, f := range ver.Functions {
					out = append(out, f.AppID)
				}
			}
		}
	}
	return out
}

// appOf is function f's app: one above it in the response, else loaded
// with its neighbours' apps.
func (r *Resolver) appOf(ctx context.Context, f *ent.Function) (*ent.App, error) {
	if f.Edges.App != nil {
		return f.Edges.App, nil
	}
	for _, a := range ancestorApps(ctx) {
		if a.ID == f.AppID {
			return a, nil
		}
	}
	a, err := loadBatched(ctx, "app", f.AppID, func() []string { return nearbyAppIDs(ctx) },
		func(ctx context.Context, ids []string) (map[string]*ent.App, error) {
			as, err := r.Ent.App.Query().Where(app.IDIn(ids...)).All(ctx)
			if err != nil {
				return nil, fmt.Errorf("loading apps: %w", err)
			}
			m := make(map[string]*ent.App, len(as))
			for _, a := range as {
				m[a.ID] = a
			}
			return m, nil
		})
	if err == nil && a == nil {
		err = fmt.Errorf("function %s: app %s not found", f.ID, f.AppID)
	}
	return a, err
}

// serving: f's version is not stopped, nor its app.
func serving(a *ent.App, f *ent.Function) bool {
	return f.StoppedAt == nil && a.State != app.StateSTOPPED
}

// taskCounts are the calls of one function waiting (PENDING) and dead.
type taskCounts struct{ pending, dead int }

// taskCountsOf counts f's pending and dead calls, with those of every
// function of its neighbours' apps in the same grouped query.
func (r *Resolver) taskCountsOf(ctx context.Context, f *ent.Function) (taskCounts, error) {
	byFn, err := loadBatched(ctx, "tasks", f.AppID, func() []string { return nearbyAppIDs(ctx) },
		func(ctx context.Context, appIDs []string) (map[string]map[string]taskCounts, error) {
			var rows []struct {
				AppID      string     `json:"app_id"`
				FunctionID string     `json:"function_id"`
				State      task.State `json:"state"`
				Count      int        `json:"count"`
			}
			err := r.Ent.Task.Query().Where(task.AppIDIn(appIDs...), task.StateIn(task.StatePENDING, task.StateDEAD)).
				GroupBy(task.FieldAppID, task.FieldFunctionID, task.FieldState).Aggregate(ent.As(ent.Count(), "count")).Scan(ctx, &rows)
			if err != nil {
				return nil, fmt.Errorf("counting tasks: %w", err)
			}
			// Every app asked about gets a map, empty or not: none is an
			// answer too.
			out := make(map[string]map[string]taskCounts, len(appIDs))
			for _, id := range appIDs {
				out[id] = map[string]taskCounts{}
			}
			for _, row := range rows {
				m := out[row.AppID]
				if m == nil {
					continue
				}
				c := m[row.FunctionID]
				if row.State == task.StateDEAD {
					c.dead += row.Count
				} else {
					c.pending += row.Count
				}
				m[row.FunctionID] = c
			}
			return out, nil
		})
	if err != nil {
		return taskCounts{}, err
	}
	return byFn[f.ID], nil
}

// versionsOf are app a's versions, newest first, made of its functions
// (loaded with those of the apps listed with it).
func (r *Resolver) versionsOf(ctx context.Context, a *ent.App) ([]*model.AppVersion, error) {
	fns, err := loadBatched(ctx, "functions", a.ID, func() []string {
		var ids []string
		for _, x := range ancestorApps(ctx) {
			ids = append(ids, x.ID)
		}
		return ids
	}, func(ctx context.Context, ids []string) (map[string][]*ent.Function, error) {
		fs, err := r.Ent.Function.Query().Where(function.AppIDIn(ids...)).
			Order(ent.Asc(function.FieldVersion), ent.Asc(function.FieldName)).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading the functions of apps: %w", err)
		}
		m := map[string][]*ent.Function{}
		for _, f := range fs {
			m[f.AppID] = append(m[f.AppID], f)
		}
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	var out []*model.AppVersion
	byNumber := map[int]*model.AppVersion{}
	for _, f := range fns {
		v := byNumber[f.Version]
		if v == nil {
			v = &model.AppVersion{Number: f.Version, CreatedAt: f.CreatedAt,
				Live: f.Version == a.LiveVersion && a.State != app.StateSTOPPED}
			byNumber[f.Version] = v
			out = append(out, v)
		}
		v.Functions = append(v.Functions, f)
		v.Serving = v.Serving || serving(a, f)
		if f.CreatedAt.Before(v.CreatedAt) {
			v.CreatedAt = f.CreatedAt
		}
	}
	slices.SortFunc(out, func(x, y *model.AppVersion) int { return y.Number - x.Number })
	return out, nil
}

// urlsOf are the full URLs that reach f while it serves.
func (r *Resolver) urlsOf(ctx context.Context, f *ent.Function) ([]string, error) {
	a, err := r.appOf(ctx, f)
	if err != nil || !serving(a, f) || functions.GroupOf(f.Kind) == "" {
		return []string{}, err
	}
	var slug, envName string
	if f.Public {
		t, err := loadBatched(ctx, "tenant", f.TenantID, noMore, func(ctx context.Context, ids []string) (map[string]string, error) {
			t, err := r.Ent.Tenant.Get(ctx, ids[0])
			if err != nil {
				return nil, fmt.Errorf("loading tenant %s: %w", ids[0], err)
			}
			return map[string]string{t.ID: t.Slug}, nil
		})
		if err != nil {
			return nil, err
		}
		e, err := loadBatched(ctx, "environment", f.EnvironmentID, noMore, func(ctx context.Context, ids []string) (map[string]string, error) {
			e, err := r.Ent.Environment.Get(ctx, ids[0])
			if err != nil {
				return nil, fmt.Errorf("loading environment %s: %w", ids[0], err)
			}
			return map[string]string{e.ID: e.Name}, nil
		})
		if err != nil {
			return nil, err
		}
		slug, envName = t, e
	}
	base := strings.TrimRight(r.PublicURL, "/")
	out := []string{}
	for _, p := range functions.Paths(a, f, slug, envName) {
		out = append(out, base+p)
	}
	return out, nil
}

func noMore() []string { return nil }

// maxNextRuns bounds nextRuns(count).
const maxNextRuns = 100

// nextRunsOf are a serving CRON function's next count ticks after now.
func nextRunsOf(f *ent.Function, now time.Time, count int) []*time.Time {
	out := []*time.Time{}
	if f.Kind != function.KindCRON || f.StoppedAt != nil || f.Cron == "" {
		return out
	}
	for _, t := range functions.NextRuns(f.Cron, now, min(max(count, 0), maxNextRuns)) {
		out = append(out, &t)
	}
	return out
}

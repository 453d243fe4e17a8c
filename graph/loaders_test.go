package graph_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
)

// queryLog records the statements the resolver's ent client sends.
type queryLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *queryLog) reset() { l.mu.Lock(); l.stmts = nil; l.mu.Unlock() }

// count is how many statements contain every part.
func (l *queryLog) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.stmts {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(s, p)
		}
		if all {
			n++
		}
	}
	return n
}

func withQueryLog(l *queryLog) func(*graph.Resolver) {
	return func(r *graph.Resolver) {
		drv := dialect.DebugWithContext(entsql.OpenDB(r.DB.Dialect, r.DB.SQL), func(_ context.Context, v ...any) {
			l.mu.Lock()
			l.stmts = append(l.stmts, strings.ReplaceAll(fmt.Sprint(v...), "`", `"`)) // SQLite quotes with backquotes
			l.mu.Unlock()
		})
		r.Ent = ent.NewClient(ent.Driver(drv))
	}
}

// A list of apps with their functions' counts, URLs and versions costs a
// few queries, whatever the number of apps and functions: not one per
// row and field.
func TestDeploymentFieldsAreBatched(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		var log queryLog
		e := newEnv(t, url, withDeployments, withQueryLog(&log))
		a := e.newTenant("batch")
		for i := range 4 {
			r := e.gql(a.adminToken, deployVersion, vars{"i": vars{"name": fmt.Sprint("app", i), "code": strings.Repeat("cd", 32), "deploy": true,
				"functions": []vars{
					{"name": fmt.Sprint("q", i), "module": "app", "qualname": "q", "queue": "default", "kind": "TASK_QUEUE"},
					{"name": fmt.Sprint("ep", i), "module": "app", "qualname": "ep", "queue": "default", "kind": "ENDPOINT"},
				}}})
			r.ok(t)
			var out struct{ DeployApp gqlApp }
			r.decode(t, &out)
			e.gql(a.memberToken, putQ, vars{"f": out.DeployApp.fn(fmt.Sprint("q", i))}).ok(t)
		}
		log.reset()
		r := e.gql(a.memberToken, `{ apps(first: 100) { edges { node { id functions { queueDepth deadLetters urls serving }
			versions { number functions { queueDepth urls } } } } } }`, nil)
		r.ok(t)
		var out struct {
			Apps struct {
				Edges []struct {
					Node struct {
						Functions []struct {
							QueueDepth int
							URLs       []string `json:"urls"`
						}
					}
				}
			}
		}
		r.decode(t, &out)
		depth := 0
		for _, e := range out.Apps.Edges {
			for _, f := range e.Node.Functions {
				depth += f.QueueDepth
				if len(f.URLs) != 2 {
					t.Errorf("urls %v, want the versioned one and the alias", f.URLs)
				}
			}
		}
		if len(out.Apps.Edges) != 4 || depth != 4 {
			t.Fatalf("%d apps, depth %d in all: %s", len(out.Apps.Edges), depth, r.Data)
		}
		if n := log.count(`"tasks"`); n != 1 {
			t.Errorf("%d queries of tasks, want 1", n)
		}
		if n := log.count(`FROM "functions"`); n > 2 {
			t.Errorf("%d queries of functions, want at most 2 (the list's, the versions')", n)
		}
		if n := log.count(`FROM "apps"`); n > 2 {
			t.Errorf("%d queries of apps, want at most 2 (count and page)", n)
		}
	})
}

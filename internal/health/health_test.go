package health

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const dsn = "postgres://levers9:hunter2@db.internal:5432/levers9"

// get asks h for path and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func routes(s *Service) http.Handler {
	mux := http.NewServeMux()
	s.Routes(mux)
	return mux
}

// /readyz is 200 only when every check passes and the server is not
// draining; it shows each check's public text, never the error behind it.
func TestReadyz(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	cases := []struct {
		name   string
		checks map[string]func(context.Context) error
		drain  bool
		code   int
		want   map[string]string
	}{
		{"all pass", map[string]func(context.Context) error{"database": ok, "storage": ok}, false, 200,
			map[string]string{"database": "ok", "storage": "ok", "draining": "ok"}},
		{"database down", map[string]func(context.Context) error{"database": Ping(pinger{errors.New("dial " + dsn + ": refused")}), "storage": ok}, false, 503,
			map[string]string{"database": "unreachable", "storage": "ok", "draining": "ok"}},
		{"a plain error is not shown", map[string]func(context.Context) error{"x": func(context.Context) error { return errors.New(dsn) }}, false, 503,
			map[string]string{"x": "failed", "draining": "ok"}},
		{"a check that panics", map[string]func(context.Context) error{"x": func(context.Context) error { panic(dsn) }}, false, 503,
			map[string]string{"x": "check failed", "draining": "ok"}},
		{"migrations pending", map[string]func(context.Context) error{"migrations": NewFlag("pending").Check}, false, 503,
			map[string]string{"migrations": "pending", "draining": "ok"}},
		{"draining", map[string]func(context.Context) error{"database": ok}, true, 503,
			map[string]string{"database": "ok", "draining": "the server is shutting down"}},
		{"storage gone", map[string]func(context.Context) error{"storage": Dir("/nonexistent/levers9-buckets")}, false, 503,
			map[string]string{"storage": "unavailable", "draining": "ok"}},
		{"storage here", map[string]func(context.Context) error{"storage": Dir(t.TempDir())}, false, 200,
			map[string]string{"storage": "ok", "draining": "ok"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Service{Version: "1.2.3", Commit: "abc123"}
			for name, c := range tc.checks {
				s.Add(name, c)
			}
			if tc.drain {
				s.Drain()
			}
			code, body := get(t, routes(s), "/readyz")
			if code != tc.code {
				t.Errorf("status %d, want %d: %s", code, tc.code, body)
			}
			if strings.Contains(body, "hunter2") || strings.Contains(body, "db.internal") || strings.Contains(body, "nonexistent") {
				t.Errorf("the body leaks the error behind a check: %s", body)
			}
			var rep Report
			if err := json.Unmarshal([]byte(body), &rep); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			wantStatus := map[int]string{200: "ok", 503: "unavailable"}[tc.code]
			if rep.Status != wantStatus || rep.Version != "1.2.3" || rep.Commit != "abc123" {
				t.Errorf("report %+v; want status %s, version 1.2.3, commit abc123", rep, wantStatus)
			}
			if len(rep.Checks) != len(tc.want) {
				t.Errorf("checks %v, want %v", rep.Checks, tc.want)
			}
			for name, want := range tc.want {
				if rep.Checks[name] != want {
					t.Errorf("check %s = %q, want %q", name, rep.Checks[name], want)
				}
			}
		})
	}
}

type pinger struct{ err error }

func (p pinger) PingContext(context.Context) error { return p.err }

// Probes within CacheFor share one round of checks (an anonymous caller
// cannot turn probes into database load), but draining shows at once.
func TestReadyzCachesChecksNotDraining(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	now := time.Unix(1000, 0)
	s := &Service{CacheFor: time.Second, Now: func() time.Time { return now }}
	s.Add("database", func(context.Context) error { runs.Add(1); return nil })
	h := routes(s)
	for range 5 {
		if code, body := get(t, h, "/readyz"); code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("5 probes within a second ran the checks %d times, want 1", n)
	}
	s.Drain()
	if code, _ := get(t, h, "/readyz"); code != 503 {
		t.Errorf("draining: status %d, want 503 at once", code)
	}
	now = now.Add(2 * time.Second)
	get(t, h, "/readyz")
	if n := runs.Load(); n != 2 {
		t.Errorf("a probe after the cache expired: %d runs, want 2", n)
	}
}

// A check that hangs fails with "timed out" after Timeout, and a probe
// whose client hung up does not cut the round short.
func TestReadyzTimesOut(t *testing.T) {
	t.Parallel()
	s := &Service{Timeout: 50 * time.Millisecond}
	s.Add("database", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := s.Check(ctx)
	if rep.OK() || rep.Checks["database"] != "timed out" {
		t.Errorf("report %+v; want database timed out", rep)
	}
}

// /healthz answers without running a check, even while every check fails
// (a restart would not mend the database).
func TestHealthzDoesNoWork(t *testing.T) {
	t.Parallel()
	s := &Service{}
	s.Add("database", func(context.Context) error { t.Error("/healthz ran a check"); return nil })
	if code, body := get(t, routes(s), "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
}

// Before Open the gate answers the probes (the process lives, it is not
// ready) and refuses everything else; after, the server's handler has
// every request.
func TestGate(t *testing.T) {
	t.Parallel()
	s := &Service{CacheFor: -1}
	migrated := NewFlag("pending")
	s.Add("migrations", migrated.Check)
	g := NewGate(s)
	steps := []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok\n"},
		{"/readyz", 503, `"migrations":"pending"`},
		{"/graphql", 503, "starting"},
	}
	for _, st := range steps {
		if code, body := get(t, g, st.path); code != st.code || !strings.Contains(body, st.body) {
			t.Errorf("before Open, %s: %d %q; want %d with %q", st.path, code, body, st.code, st.body)
		}
	}
	migrated.Set()
	mux := http.NewServeMux()
	s.Routes(mux)
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "graphql") })
	g.Open(mux)
	for path, want := range map[string]string{"/graphql": "graphql", "/readyz": `"status":"ok"`} {
		if code, body := get(t, g, path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("after Open, %s: %d %q", path, code, body)
		}
	}
}

// A flag fails with its pending text, passes once set and fails again,
// with the reason, once cleared; All fails with its first failure.
func TestFlagAndAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := NewFlag("not started")
	missing := DirIfExists(t.TempDir() + "/made-on-first-use")
	both := All(missing, f.Check)
	steps := []struct {
		do   func()
		want string // "": passes
	}{
		{func() {}, "not started"},
		{f.Set, ""},
		{func() { f.Clear("stopped") }, "stopped"},
	}
	for i, st := range steps {
		st.do()
		for name, check := range map[string]func(context.Context) error{"flag": f.Check, "all": both} {
			got := "" // passed
			if err := check(ctx); err != nil {
				got = publicText(err)
			}
			if got != st.want {
				t.Errorf("step %d, %s: %q, want %q", i, name, got, st.want)
			}
		}
	}
	if err := All(Dir(t.TempDir()+"/missing"), f.Check)(ctx); err == nil || publicText(err) != "unavailable" {
		t.Errorf("All with a missing directory first: %v", err)
	}
}

package ui_test

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui"
)

// seededApp is an app stored directly, as the functions service would
// leave it, with its rows.
type seededApp struct {
	app       *ent.App
	functions []*ent.Function
	container *ent.Container
	job       *ent.Job
	cold      *ent.Task // ran on a new container: every start phase
	warm      *ent.Task // ran on a warm container: no start phase
	failed    *ent.Task
	pending   *ent.Task
}

const traceback = "Traceback (most recent call last):\n  File main.py, line 3, in divide\nZeroDivisionError: division by zero"

// seedApp stores an app of v's with functions functions and calls calls
// spread over them (at least 4: a cold, a warm, a failed and a pending
// one), and one container of the first function running in a job.
func (e *env) seedApp(v *viewer.Viewer, name string, functions, calls int) seededApp {
	e.t.Helper()
	sys := viewer.SystemContext(context.Background())
	c := e.db.Ent
	q := c.Queue.Query().Where(queue.TenantID(v.TenantID), queue.Name(tenancy.DefaultQueue)).OnlyX(sys)
	s := seededApp{}
	s.app = c.App.Create().SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).SetName(name).
		SetCodeHash(strings.Repeat("ab", 32)).SetOwnerID(v.UserID).SaveX(sys)
	for i := range functions {
		f := c.Function.Create().SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).SetAppID(s.app.ID).
			SetName(fmt.Sprintf("fn%03d", i)).SetModule("main").SetQualname(fmt.Sprintf("fn%03d", i)).
			SetOwnerID(v.UserID).SetQueueID(q.ID).SetGpus(i % 2).SetGpuTypes([]string{"H100"}).
			SetCPU(0.5).SetMemoryMib(2048).SetConcurrency(4).SetMinContainers(1).SetMaxContainers(7).SetKeepWarm(2).
			SaveX(sys)
		s.functions = append(s.functions, f)
	}
	s.job = e.submit(v, name+"-container", "true")
	s.container = c.Container.Create().SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).
		SetFunctionID(s.functions[0].ID).SetOwnerID(v.UserID).SetJobID(s.job.ID).
		SetState("READY").SaveX(sys)
	queued := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	at := func(d time.Duration) time.Time { return queued.Add(d) }
	for i := range calls {
		f := s.functions[i%len(s.functions)]
		tc := c.Task.Create().SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).
			SetFunctionID(f.ID).SetAppID(s.app.ID).SetOwnerID(v.UserID).SetMaxAttempts(3).SetCreatedAt(queued)
		switch i {
		case 0: // cold: every phase
			tc.SetState(task.StateCOMPLETE).SetAttempt(1).SetContainerID(s.container.ID).
				SetScheduledAt(at(250 * time.Millisecond)).SetImageReadyAt(at(1500 * time.Millisecond)).
				SetCodeFetchedAt(at(2 * time.Second)).SetProcessStartedAt(at(2500 * time.Millisecond)).
				SetImportedAt(at(3 * time.Second)).SetStartedAt(at(3100 * time.Millisecond)).SetFinishedAt(at(4 * time.Second))
		case 1: // warm: straight to the call
			tc.SetState(task.StateCOMPLETE).SetAttempt(1).SetContainerID(s.container.ID).
				SetStartedAt(at(20 * time.Millisecond)).SetFinishedAt(at(70 * time.Millisecond))
		case 2:
			tc.SetState(task.StateERROR).SetAttempt(3).SetErrorKind("exception").
				SetErrorMessage("ZeroDivisionError: division by zero").SetErrorTraceback(traceback).
				SetStartedAt(at(time.Second)).SetFinishedAt(at(2 * time.Second))
		case 3:
			tc.SetState(task.StatePENDING)
		default:
			tc.SetState(task.StateCOMPLETE).SetAttempt(1).SetStartedAt(at(time.Second)).SetFinishedAt(at(2 * time.Second))
		}
		t := tc.SaveX(sys)
		switch i {
		case 0:
			s.cold = t
		case 1:
			s.warm = t
		case 2:
			s.failed = t
		case 3:
			s.pending = t
		}
	}
	return s
}

func expectIn(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not show %q", what, w)
		}
	}
}

// A member sees the environment's apps, an app's functions with their
// calls counted by state, its containers, calls and errors, and a call's
// phases; another tenant's app and call are not found.
func TestDashboardApps(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		s := e.seedApp(e.admin, "imagegen", 2, 6)
		o := e.seedApp(e.other, "secret-app", 1, 4)
		b := e.browser()
		b.signIn(memberEmail)

		code, body := b.get("/apps")
		if code != http.StatusOK {
			t.Fatalf("GET /apps: %d", code)
		}
		expectIn(t, "the apps table", body, `id="app-`+s.app.ID+`"`, "imagegen", "RUNNING", "ephemeral", adminEmail, ">2<", " UTC")
		if strings.Contains(body, "secret-app") {
			t.Error("the apps table shows another tenant's app")
		}

		code, body = b.get("/apps/" + s.app.ID)
		if code != http.StatusOK {
			t.Fatalf("GET /apps/%s: %d", s.app.ID, code)
		}
		body = html.UnescapeString(body)
		expectIn(t, "the app page", body, "fn000", "fn001", "default", "1 × H100", "none", "0.5", "2 GiB", "1 / 7 / 2",
			`id="container-`+s.container.ID+`"`, `href="/jobs/`+s.job.ID+`"`, "READY",
			`href="/tasks/`+s.cold.ID+`"`, `href="/tasks/`+s.pending.ID+`"`, "3 of 3",
			`id="error-`+s.failed.ID+`"`, "ZeroDivisionError: division by zero", "<details>", traceback)
		// fn000 has calls 0, 2, 4 (COMPLETE, ERROR, COMPLETE); fn001 has
		// 1, 3, 5 (COMPLETE, PENDING, COMPLETE).
		expectIn(t, "the calls by state", body,
			`<td class="num" data-state="COMPLETE">2</td><td class="num" data-state="ERROR">1</td>`,
			`<td class="num" data-state="PENDING">1</td><td class="num" data-state="RUNNING">0</td><td class="num" data-state="COMPLETE">2</td>`)

		code, body = b.get("/tasks/" + s.cold.ID)
		if code != http.StatusOK {
			t.Fatalf("GET /tasks/%s: %d", s.cold.ID, code)
		}
		expectIn(t, "a cold call's page", body, "fn000", "imagegen", "1 of 3", s.container.ID, `href="/jobs/`+s.job.ID+`"`,
			"+250ms", "+1.5s", "+2s", "+2.5s", "+3s", "+3.1s", "+4s", `<meter min="0" max="4000" value="1500">`)
		if strings.Contains(body, "warm — skipped") {
			t.Error("a cold call's page shows a skipped phase")
		}
		_, body = b.get("/tasks/" + s.warm.ID)
		if n := strings.Count(body, "warm — skipped"); n != 5 {
			t.Errorf("a warm call's page shows %d skipped phases; want 5 (scheduled to imported)", n)
		}
		expectIn(t, "a warm call's page", body, "+20ms", "+70ms")
		_, body = b.get("/tasks/" + s.failed.ID)
		expectIn(t, "a failed call's page", html.UnescapeString(body), `id="traceback"`, traceback, "exception", "3 of 3")
		_, body = b.get("/tasks/" + s.pending.ID)
		if strings.Contains(body, "warm — skipped") {
			t.Error("a pending call's page shows skipped phases")
		}

		for _, path := range []string{"/apps/" + o.app.ID, "/tasks/" + o.cold.ID} {
			if code, _ := b.get(path); code != http.StatusNotFound {
				t.Errorf("GET %s (another tenant's): %d; want 404", path, code)
			}
		}
	})
}

// The empty list says how to get an app.
func TestDashboardAppsEmpty(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		b := e.browser()
		b.signIn(adminEmail)
		code, body := b.get("/apps")
		if code != http.StatusOK || !strings.Contains(body, "No apps yet") {
			t.Fatalf("GET /apps with no app: %d %s", code, body)
		}
		if !strings.Contains(body, `href="/apps" aria-current="page"`) {
			t.Error("the navigation does not mark Apps as the current page")
		}
	})
}

// An app's page runs as many queries for 50 functions with 200 calls as
// for 2 with 4: counts are grouped, edges loaded in bulk.
func TestDashboardAppQueriesDoNotGrowWithRows(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		var n atomic.Int64
		e := newEnv(t, dbURL, envOptions{queries: &n})
		small := e.seedApp(e.admin, "small", 2, 4)
		big := e.seedApp(e.admin, "big", 50, 200)
		b := e.browser()
		b.signIn(adminEmail)
		count := func(path string) int64 {
			t.Helper()
			n.Store(0)
			if code, _ := b.get(path); code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			return n.Load()
		}
		count("/apps") // warm up: the first request of a session may write
		few, many := count("/apps/"+small.app.ID), count("/apps/"+big.app.ID)
		if few != many {
			t.Errorf("GET /apps/{id}: %d queries for 2 functions, %d for 50", few, many)
		}
		if many > 15 {
			t.Errorf("GET /apps/{id}: %d queries; want at most 15", many)
		}
		if l := count("/apps"); l > 12 {
			t.Errorf("GET /apps: %d queries; want at most 12", l)
		}
	})
}

// With the functions service, a pending call's page says why it waits,
// in the service's words.
func TestDashboardTaskWaitReason(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		s := e.seedApp(e.admin, "waiting", 2, 4)
		// The harness's dashboard has no functions service: serve one that
		// has, on the same database and sessions.
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		log := slog.New(slog.DiscardHandler)
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		fns := &functions.Service{DB: e.db, Log: log, Now: time.Now, Jobs: e.jobs}
		if _, err := ui.Routes(ctx, mux, ui.Config{DB: e.db, Auth: auth.NewService(e.db.Ent, log, nil), Tenancy: e.tenancy,
			Jobs: e.jobs, Functions: fns, Log: log, PublicURL: srv.URL, Version: "test"}); err != nil {
			t.Fatal(err)
		}
		withFns := *e
		withFns.srv = srv
		b := withFns.browser()
		b.signIn(memberEmail)
		want, err := fns.WaitReason(viewer.NewContext(ctx, e.viewerOf(memberEmail)), s.pending)
		if err != nil || want == "" {
			t.Fatalf("the service gives no wait reason (%q, %v): the test proves nothing", want, err)
		}
		code, body := b.get("/tasks/" + s.pending.ID)
		if code != http.StatusOK {
			t.Fatalf("GET /tasks/%s: %d", s.pending.ID, code)
		}
		expectIn(t, "a pending call's page", html.UnescapeString(body), `id="wait-reason"`, want)
		if _, body := b.get("/tasks/" + s.cold.ID); strings.Contains(body, `id="wait-reason"`) {
			t.Error("a finished call's page shows a wait reason")
		}
	})
}

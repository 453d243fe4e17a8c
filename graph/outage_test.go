package graph_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// TestDatabaseOutage: while the database cannot be reached, GraphQL
// answers UNAVAILABLE with 503 and Retry-After, which clients retry,
// not INTERNAL 500, which they report as a bug; once it is back, the
// same requests succeed.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		// A cluster of its own: stopping the shared one would fail every
		// other test.
		ctx := context.Background()
		c, err := dbtest.StartCluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		e := newEnv(t, c.URL)
		tn := e.newTenant("outage")
		e.outageCheck(tn, false)
		if err := c.Halt(ctx); err != nil {
			t.Fatal(err)
		}
		e.outageCheck(tn, true)
		if err := c.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		e.waitBack(tn.adminToken)
		e.outageCheck(tn, false)
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		// Another process holding SQLite's write lock past busy_timeout
		// (10 s) is an outage too; reads go on (WAL).
		url := dbtest.SQLiteURL(t)
		e := newEnv(t, url)
		tn := e.newTenant("busy")
		other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite:")+"?_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		tx, err := other.Begin()
		if err != nil {
			t.Fatal(err)
		}
		st, h, r := e.raw("", signInQuery, vars{"e": tn.admin.Email, "p": testPassword})
		checkUnavailable(t, "signIn", st, h, r)
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		e.outageCheck(tn, false)
	})
}

const signInQuery = `mutation($e:String!,$p:String!){ signIn(email:$e,password:$p){ token } }`

// outageCheck sends a query with tn's admin token (refused when the token
// cannot be looked up) and a sign-in (which fails in its resolver), and checks that
// both are UNAVAILABLE when down, else answered.
func (e *env) outageCheck(tn *tenant, down bool) {
	e.t.Helper()
	t := e.t.(*testing.T)
	for _, req := range []struct {
		name, token, query string
		vars               vars
	}{
		{"authenticated query", tn.adminToken, `{ viewer { user { email } } }`, nil},
		{"signIn", "", signInQuery, vars{"e": tn.admin.Email, "p": testPassword}},
	} {
		st, h, r := e.raw(req.token, req.query, req.vars)
		if down {
			checkUnavailable(t, req.name, st, h, r)
			continue
		}
		if st != http.StatusOK || len(r.Errors) > 0 || h.Get("Retry-After") != "" {
			t.Fatalf("%s with the database up: %d %+v (Retry-After %q), want 200 without errors", req.name, st, r.Errors, h.Get("Retry-After"))
		}
	}
}

// waitBack waits for the first answer after the database came back: a
// connection the pool held across the restart may fail one request more,
// but as UNAVAILABLE, never INTERNAL.
func (e *env) waitBack(token string) {
	e.t.Helper()
	t := e.t.(*testing.T)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, h, r := e.raw(token, `{ viewer { user { email } } }`, nil)
		if st == http.StatusOK && len(r.Errors) == 0 {
			return
		}
		checkUnavailable(t, "query while the database comes back", st, h, r)
		if time.Now().After(deadline) {
			t.Fatal("the server still answers UNAVAILABLE 30 s after the database came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func checkUnavailable(t *testing.T, what string, status int, h http.Header, r response) {
	t.Helper()
	if status != http.StatusServiceUnavailable || r.code() != "UNAVAILABLE" || h.Get("Retry-After") != "3" {
		t.Fatalf("%s with the database down: %d %+v (Retry-After %q), want 503 UNAVAILABLE with Retry-After 3",
			what, status, r.Errors, h.Get("Retry-After"))
	}
}

// raw is post with the answer's status and header.
func (e *env) raw(token, query string, v vars) (int, http.Header, response) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": v})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		e.t.Fatalf("status %d, body %q: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, resp.Header, r
}

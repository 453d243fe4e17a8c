package fault

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestHTTPStatus pins the status of every code, and fails when a Code
// constant is declared without one: HTTPStatus would quietly answer 500.
func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	want := map[Code]int{
		Unauthenticated:    http.StatusUnauthorized,
		Forbidden:          http.StatusForbidden,
		NotFound:           http.StatusNotFound,
		BadUserInput:       http.StatusBadRequest,
		InsufficientTokens: http.StatusPaymentRequired,
		RateLimited:        http.StatusTooManyRequests,
		Unavailable:        http.StatusServiceUnavailable,
		Internal:           http.StatusInternalServerError,
	}
	for c, status := range want {
		if got := HTTPStatus(c); got != status {
			t.Errorf("HTTPStatus(%s) = %d, want %d", c, got, status)
		}
	}
	for _, name := range declaredCodes(t) {
		c, ok := codeNamed[name]
		if !ok {
			t.Errorf("Code constant %s is not in this test's table", name)
			continue
		}
		if _, ok := statuses[c]; !ok {
			t.Errorf("Code %s has no HTTP status in statuses", c)
		}
	}
	if got := HTTPStatus("NO_SUCH_CODE"); got != http.StatusInternalServerError {
		t.Errorf("HTTPStatus of an unknown code = %d, want 500", got)
	}
}

// codeNamed names the constants the table above covers.
var codeNamed = map[string]Code{
	"Unauthenticated": Unauthenticated, "Forbidden": Forbidden, "NotFound": NotFound,
	"BadUserInput": BadUserInput, "InsufficientTokens": InsufficientTokens,
	"RateLimited": RateLimited, "Unavailable": Unavailable, "Internal": Internal,
}

// declaredCodes lists the constants of type Code declared in this
// package's source, so a new one cannot be forgotten here.
func declaredCodes(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
					for _, n := range vs.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("found no Code constants: the parse is wrong")
	}
	return names
}

// TestFinal: retrying helps only after limits, outages and internal errors.
func TestFinal(t *testing.T) {
	t.Parallel()
	for c, want := range map[Code]bool{
		Unauthenticated: true, Forbidden: true, NotFound: true, BadUserInput: true, InsufficientTokens: true,
		RateLimited: false, Unavailable: false, Internal: false, Code("SOMETHING_NEW"): false,
	} {
		if got := c.Final(); got != want {
			t.Errorf("%s.Final() = %v, want %v", c, got, want)
		}
	}
}

type tooLarge struct{ err error }

func (e tooLarge) Error() string { return e.err.Error() }
func (e tooLarge) Unwrap() error { return e.err }
func (tooLarge) HTTPStatus() int { return http.StatusRequestEntityTooLarge }

// TestWriteJSON: a fault answers its code and words, a StatusError its own
// status, anything else 500 "internal error" without its text.
func TestWriteJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		body   string
	}{
		{"fault", New(NotFound, "no such bucket"), 404, `{"error":{"code":"NOT_FOUND","message":"no such bucket"}}`},
		{"wrapped status", fmt.Errorf("upload: %w", tooLarge{Invalid("body", "too big")}), 413, `{"error":{"code":"BAD_USER_INPUT","message":"body: too big"}}`},
		{"internal", errors.New("dial tcp 10.0.0.1:5432: refused"), 500, `{"error":{"code":"INTERNAL","message":"internal error"}}`},
		{"database outage", fmt.Errorf("reading the bucket: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}), 503,
			`{"error":{"code":"UNAVAILABLE","message":"the database cannot be reached now; try again shortly"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			WriteJSON(rec, nil, "test", tc.err)
			if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.body ||
				rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("got %d %q (%s), want %d %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), tc.status, tc.body)
			}
			// Only an outage asks to come back, and says when.
			if ra, want := rec.Header().Get("Retry-After"), map[bool]string{true: "3"}[tc.status == 503]; ra != want {
				t.Errorf("Retry-After %q, want %q", ra, want)
			}
		})
	}
}

// TestOutage: a database outage is UNAVAILABLE with a retry delay, but no
// fault Classify returns: its callers would take it for the user's doing
// (a form message, a session ended).
func TestOutage(t *testing.T) {
	t.Parallel()
	down := fmt.Errorf("looking up token: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P03"})
	o := Outage(down)
	if o == nil || o.Code != Unavailable || o.RetryAfter() != OutageRetryAfter {
		t.Fatalf("Outage(%v) = %+v, want UNAVAILABLE retrying after %d s", down, o, OutageRetryAfter)
	}
	if fs := Classify(down); fs != nil {
		t.Errorf("Classify(%v) = %+v, want nil", down, fs)
	}
	for _, err := range []error{nil, errors.New("a bug"), &pgconn.PgError{Code: "23505"}, New(NotFound, "no such job")} {
		if o := Outage(err); o != nil {
			t.Errorf("Outage(%v) = %+v, want nil", err, o)
		}
	}
	h := http.Header{}
	SetRetryAfter(h, New(BadUserInput, "no"))
	if len(h) != 0 {
		t.Errorf("a fault without a delay set %v", h)
	}
}

package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
)

// TestRelaySession: the dashboard's session cookie signs a user in to the
// relay as well as a token does; the job never sees it.
func TestRelaySession(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		// Sessions as the dashboard's middleware does them: the cookie
		// "alice" is Alice's session.
		w := newRelayWorld(t, dburl, worldOptions{sessions: func(w *relayWorld) func(http.Handler) http.Handler {
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					if c, err := r.Cookie(sessionCookie); err == nil && c.Value == "alice" {
						r = r.WithContext(viewer.NewContext(r.Context(), viewer.FromContext(w.tn.As(w.alice))))
					}
					next.ServeHTTP(rw, r)
				})
			}
		}})
		j := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
		path := "/relay/" + j.ID + "/web/http/x"
		cases := []struct {
			name, cookie, token string
			status              int
		}{
			{"the session", "levers9_session=alice; app=1", "", http.StatusOK},
			{"no session", "app=1", "", http.StatusUnauthorized},
			{"an unknown session", "levers9_session=mallory; app=1", "", http.StatusUnauthorized},
			{"a bad token is not overlooked for the session", "levers9_session=alice; app=1", "not-a-token", http.StatusUnauthorized},
			{"a token and another's session: the token's user", "levers9_session=alice; app=1", w.bobTok, http.StatusOK},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				resp, err := w.do(t, http.MethodGet, path, tc.token, http.Header{"Cookie": {tc.cookie}})
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.status {
					resp.Body.Close()
					t.Fatalf("status %d; want %d", resp.StatusCode, tc.status)
				}
				if tc.status != http.StatusOK {
					readRefusal(t, resp)
					return
				}
				defer resp.Body.Close()
				var got seen
				if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
					t.Fatal(err)
				}
				if got.Cookie == nil || *got.Cookie != "app=1" {
					t.Errorf("the service saw Cookie %v; want app=1 only", deref(got.Cookie))
				}
				// Sandboxed exactly when the user is not the owner.
				sandboxed := strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox")
				if sandboxed != (tc.token != "") {
					t.Errorf("sandboxed = %v for %s", sandboxed, tc.name)
				}
			})
		}

		t.Run("a terminal with the session", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			u := "ws" + strings.TrimPrefix(w.http.URL, "http") + execPath(j.ID, "web", "sh", "-c", "echo hi")
			c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {"levers9_session=alice"}}})
			if err != nil {
				noTerminals(t, resp)
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer c.CloseNow()
			if stdout, _, _ := readTerminal(t, websocket.NetConn(ctx, c, websocket.MessageBinary)); stdout != "hi\n" {
				t.Errorf("stdout %q; want hi", stdout)
			}
		})
	})
}

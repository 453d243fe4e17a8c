package relay_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
)

// TestRelayRefusals: every refusal is an HTTP status with a JSON
// {"code","error"}, before any upgrade; it opens no stream and marks no
// job active.
func TestRelayRefusals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		w := newRelayWorld(t, dburl, worldOptions{})
		// Alice's job, an admin's job on a batch-only queue, and a job
		// that does not run (never placed).
		mine := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
		batch := w.tn.AddQueue(t, "batch")
		if err := w.db.Ent.Queue.UpdateOneID(batch.ID).SetMode(queue.ModeBatch).Exec(w.sys); err != nil {
			t.Fatal(err)
		}
		batchJob := w.run(t, nil, jobspec.Job{Queue: "batch", Services: []jobspec.Service{webService(t)}})
		pending := w.tn.SubmitSpec(t, w.jobs, w.alice, jobspec.Job{Name: "p", Queue: "default", Services: []jobspec.Service{webService(t)}})
		// A job whose node is not connected to this replica right now.
		away := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
		w.tunnel.away.Store(away.ID, true)
		revoked := w.tn.Token(t, w.alice)
		w.revoke(t, revoked)

		relay := func(id, rest string) string { return "/relay/" + id + rest }
		tcp := func(id, rest string) string { return "/streams/tcp/" + id + rest }
		exec := func(id string) string { return execPath(id, "web", "true") }
		attach := func(id string) string { return "/streams/attach/" + id + "/web" }
		cases := []struct {
			name, path, token string
			status            int
			code              string
			says              []string // what the message names
		}{
			{"anonymous, relay", relay(mine.ID, "/web/http/"), "", 401, "UNAUTHENTICATED", nil},
			{"anonymous, port-forward", tcp(mine.ID, "/web/echo"), "", 401, "UNAUTHENTICATED", nil},
			{"anonymous, exec", exec(mine.ID), "", 401, "UNAUTHENTICATED", nil},
			{"a malformed token", relay(mine.ID, "/web/http/"), "not-a-token", 401, "UNAUTHENTICATED", nil},
			{"a revoked token, relay", relay(mine.ID, "/web/http/"), revoked, 401, "UNAUTHENTICATED", nil},
			{"a revoked token, port-forward", tcp(mine.ID, "/web/echo"), revoked, 401, "UNAUTHENTICATED", nil},
			{"another tenant, relay", relay(mine.ID, "/web/http/"), w.strangerTok, 404, "NOT_FOUND", nil},
			{"another tenant, port-forward", tcp(mine.ID, "/web/echo"), w.strangerTok, 404, "NOT_FOUND", nil},
			{"another tenant, exec", exec(mine.ID), w.strangerTok, 404, "NOT_FOUND", nil},
			{"another tenant, attach", attach(mine.ID), w.strangerTok, 404, "NOT_FOUND", nil},
			{"a member not the owner, exec", exec(mine.ID), w.bobTok, 403, "FORBIDDEN", []string{"owner"}},
			{"a member not the owner, attach", attach(mine.ID), w.bobTok, 403, "FORBIDDEN", []string{"owner"}},
			{"a batch-only queue, exec", exec(batchJob.ID), w.adminTk, 403, "FORBIDDEN", []string{"batch"}},
			{"a batch-only queue, attach", attach(batchJob.ID), w.adminTk, 403, "FORBIDDEN", []string{"batch"}},
			{"a job not running, relay", relay(pending.ID, "/web/http/"), w.aliceTok, 400, "BAD_USER_INPUT", []string{"pending"}},
			{"a job not running, exec", exec(pending.ID), w.aliceTok, 400, "BAD_USER_INPUT", []string{"pending"}},
			{"an unknown job", relay("job_nope", "/web/http/"), w.aliceTok, 404, "NOT_FOUND", []string{"job_nope"}},
			{"an unknown service", relay(mine.ID, "/db/http/"), w.aliceTok, 404, "NOT_FOUND", []string{`"db"`}},
			{"an unknown port, relay", relay(mine.ID, "/web/grpc/x"), w.aliceTok, 404, "NOT_FOUND", []string{`"grpc"`, "http (", "echo ("}},
			{"an unknown port, port-forward", tcp(mine.ID, "/web/22"), w.aliceTok, 404, "NOT_FOUND", []string{`"22"`, "http (", "echo ("}},
			{"a node not connected, relay", relay(away.ID, "/web/http/"), w.aliceTok, 503, "UNAVAILABLE", []string{"not connected"}},
			{"a node not connected, port-forward", tcp(away.ID, "/web/echo"), w.aliceTok, 503, "UNAVAILABLE", []string{"not connected"}},
			{"exec without a command", "/streams/exec/" + mine.ID + "/web", w.aliceTok, 400, "BAD_USER_INPUT", nil},
			{"exec with a bad size", exec(mine.ID) + "&rows=x", w.aliceTok, 400, "BAD_USER_INPUT", []string{"rows"}},
			{"attach to a service without a terminal", attach(mine.ID), w.aliceTok, 400, "BAD_USER_INPUT", nil},
		}
		// A page of another origin (a job on the relay domain: the same
		// site, so the dashboard's cookie goes along) opens no stream.
		for _, path := range []string{exec(mine.ID), tcp(mine.ID, "/web/echo"), attach(mine.ID)} {
			t.Run("another origin, "+path, func(t *testing.T) {
				t.Parallel()
				hdr := http.Header{"Origin": {"http://http-web-" + mine.ID + ".relay.test"}, "Connection": {"Upgrade"}, "Upgrade": {"websocket"},
					"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
				resp, err := w.do(t, http.MethodGet, path, w.aliceTok, hdr)
				if err != nil {
					t.Fatal(err)
				}
				if r := readRefusal(t, resp); resp.StatusCode != http.StatusForbidden || r.Code != "FORBIDDEN" {
					t.Fatalf("%d %+v; want 403 FORBIDDEN", resp.StatusCode, r)
				}
			})
		}
		// Nor does a plain GET (an <img> of such a page sends no Origin).
		for _, path := range []string{exec(mine.ID), tcp(mine.ID, "/web/echo")} {
			t.Run("not a WebSocket, "+path, func(t *testing.T) {
				t.Parallel()
				resp, err := w.do(t, http.MethodGet, path, w.aliceTok, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r := readRefusal(t, resp); resp.StatusCode != http.StatusBadRequest || r.Code != "BAD_USER_INPUT" {
					t.Fatalf("%d %+v; want 400 BAD_USER_INPUT", resp.StatusCode, r)
				}
			})
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				hdr := http.Header{"Cookie": {"levers9_session=forged"}}
				if strings.HasPrefix(tc.path, "/streams/") {
					hdr.Set("Connection", "Upgrade")
					hdr.Set("Upgrade", "websocket")
					hdr.Set("Sec-WebSocket-Version", "13")
					hdr.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
				}
				resp, err := w.do(t, http.MethodGet, tc.path, tc.token, hdr)
				if err != nil {
					t.Fatal(err)
				}
				r := readRefusal(t, resp)
				if resp.StatusCode != tc.status || r.Code != tc.code {
					t.Fatalf("%d %+v; want %d %s", resp.StatusCode, r, tc.status, tc.code)
				}
				for _, s := range tc.says {
					if !strings.Contains(r.Error, s) {
						t.Errorf("message %q does not say %s", r.Error, s)
					}
				}
			})
		}
		t.Cleanup(func() {
			// After every refusal (the subtests ran): no stream, no mark.
			if n := w.tunnel.opened.Load(); n != 0 {
				t.Errorf("refusals opened %d streams", n)
			}
			for _, id := range []string{mine.ID, batchJob.ID, pending.ID, away.ID} {
				j, err := w.db.Ent.Job.Query().Where(job.ID(id)).Only(fixture.Sys())
				if err != nil || j.LastActiveAt != nil || w.marksOf(id) != 0 {
					t.Errorf("job %s after refusals: %v, last active %v, %d marks; want none", id, err, j.LastActiveAt, w.marksOf(id))
				}
			}
		})
	})
}

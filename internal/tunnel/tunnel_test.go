package tunnel_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/tenancy"
)

// TestJoin: a valid invite makes a node in the default queue, once; every
// bad invite is refused with its own code and writes nothing.
func TestJoin(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		code, inv := w.invite(t, nil)
		status, body := w.joinRaw(t, map[string]any{"invite": code, "name": "gpu-01", "inventory": map[string]any{"cpus": 4, "memoryMiB": 1024}})
		if status != http.StatusOK || body["nodeId"] == nil || !strings.HasPrefix(body["credential"].(string), "lv9_") {
			t.Fatalf("join = %d %v", status, body)
		}
		n, err := w.db.Ent.Node.Get(w.sys, body["nodeId"].(string))
		if err != nil || n.Name != "gpu-01" || n.TenantID != inv.TenantID || n.Inventory.CPUs != 4 {
			t.Fatalf("node = %+v, %v", n, err)
		}
		inQueue, err := w.db.Ent.Queue.Query().Where(queue.Name(tenancy.DefaultQueue), queue.HasNodesWith(node.ID(n.ID))).Exist(w.sys)
		if err != nil || !inQueue {
			t.Fatalf("node in the default queue: %v, %v", inQueue, err)
		}
		used, err := w.db.Ent.NodeInvite.Query().Where(nodeinvite.ID(inv.ID), nodeinvite.UsedAtNotNil(), nodeinvite.NodeID(n.ID)).Exist(w.sys)
		if err != nil || !used {
			t.Fatalf("invite marked used: %v, %v", used, err)
		}

		expired, _ := w.invite(t, func() time.Time { return time.Now().Add(-2 * time.Hour) })
		revoked, rinv := w.invite(t, nil)
		ns := &nodes.Service{Ent: w.db.Ent, Now: time.Now}
		if _, err := ns.RevokeInvite(w.admin, rinv.ID); err != nil {
			t.Fatal(err)
		}
		taken, _ := w.invite(t, nil)
		before, _ := w.db.Ent.Node.Query().Count(w.sys)
		for _, tc := range []struct {
			name   string
			body   map[string]any
			status int
			code   string
		}{
			{"reused", map[string]any{"invite": code, "name": "gpu-02"}, http.StatusConflict, "INVITE_USED"},
			{"expired", map[string]any{"invite": expired, "name": "gpu-03"}, http.StatusGone, "INVITE_EXPIRED"},
			{"revoked", map[string]any{"invite": revoked, "name": "gpu-04"}, http.StatusForbidden, "INVITE_REVOKED"},
			{"unknown", map[string]any{"invite": "lv9_nosuchcode", "name": "gpu-05"}, http.StatusUnauthorized, "INVITE_UNKNOWN"},
			{"no code", map[string]any{"name": "gpu-06"}, http.StatusBadRequest, "BAD_REQUEST"},
			{"bad name", map[string]any{"invite": taken, "name": "no spaces allowed"}, http.StatusBadRequest, "BAD_NAME"},
			{"name taken", map[string]any{"invite": taken, "name": "gpu-01"}, http.StatusConflict, "NAME_TAKEN"},
			{"bad inventory", map[string]any{"invite": taken, "name": "gpu-07", "inventory": map[string]any{"cpus": -1}}, http.StatusBadRequest, "BAD_INVENTORY"},
		} {
			status, body := w.joinRaw(t, tc.body)
			if status != tc.status || body["code"] != tc.code || body["error"] == "" {
				t.Errorf("%s: join = %d %v; want %d %s", tc.name, status, body, tc.status, tc.code)
			}
		}
		after, _ := w.db.Ent.Node.Query().Count(w.sys)
		if after != before {
			t.Errorf("refused joins wrote nodes: %d before, %d after", before, after)
		}
		if used, _ := w.db.Ent.NodeInvite.Query().Where(nodeinvite.UsedAtNotNil()).Count(w.sys); used != 1 {
			t.Errorf("%d invites used; want 1", used)
		}
	})
}

// TestTunnel: jobs placed on a node run there through the real agent and
// process runtime; bad credentials and bad messages are refused without
// disturbing the node.
func TestTunnel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		st := w.startAgent(t, "n1")

		t.Run("job completes with exit codes and logs", func(t *testing.T) {
			j := w.runOn(t, st.NodeID,
				jobspec.Service{Name: "main", Command: []string{"sh", "-c", "echo hello; echo oops >&2; echo bye"}, CPU: 1, MemoryMiB: 64},
				jobspec.Service{Name: "side", Command: []string{"sh", "-c", "echo side"}, CPU: 1, MemoryMiB: 64},
			)
			j = w.waitEnded(t, j.ID)
			if j.Status != job.StatusComplete || j.StartedAt == nil || j.FinishedAt == nil {
				t.Fatalf("job = %s %q started %v finished %v", j.Status, j.StatusReason, j.StartedAt, j.FinishedAt)
			}
			for _, s := range j.Edges.Services {
				if s.ExitCode == nil || *s.ExitCode != 0 || s.DispatchedAt == nil || string(s.Status) != "COMPLETE" {
					t.Errorf("service %s: status %s exit %v dispatched %v", s.Name, s.Status, s.ExitCode, s.DispatchedAt)
				}
			}
			// Logs are stored when shipped; the job may end a moment before.
			var texts []string
			w.waitFor(t, "4 log lines", func() bool {
				lines, err := w.db.Ent.LogLine.Query().Where(logline.JobID(j.ID)).Order(logline.BySeq()).All(w.sys)
				texts = texts[:0]
				for _, l := range lines {
					texts = append(texts, l.Service+"/"+string(l.Stream)+":"+l.Text)
				}
				return err == nil && len(lines) >= 4
			})
			got := strings.Join(texts, " ")
			for _, want := range []string{"main/stdout:hello", "main/stderr:oops", "main/stdout:bye", "side/stdout:side"} {
				if !strings.Contains(got, want) {
					t.Errorf("logs %q lack %q", got, want)
				}
			}
		})

		t.Run("missing command ends ERROR with the reason", func(t *testing.T) {
			j := w.runOn(t, st.NodeID, jobspec.Service{Name: "main", Command: []string{"/no/such/command"}, CPU: 1, MemoryMiB: 64})
			j = w.waitEnded(t, j.ID)
			if j.Status != job.StatusError || !strings.Contains(j.StatusReason, "service main failed") {
				t.Fatalf("job = %s %q; want ERROR naming service main", j.Status, j.StatusReason)
			}
		})

		t.Run("non-zero exit fails the job and stops the sibling", func(t *testing.T) {
			j := w.runOn(t, st.NodeID,
				jobspec.Service{Name: "long", Command: []string{"sleep", "600"}, CPU: 1, MemoryMiB: 64},
				jobspec.Service{Name: "bad", Command: []string{"sh", "-c", "sleep 0.2; exit 3"}, CPU: 1, MemoryMiB: 64},
			)
			j = w.waitEnded(t, j.ID)
			if j.Status != job.StatusError || !strings.Contains(j.StatusReason, "service bad failed") {
				t.Fatalf("job = %s %q", j.Status, j.StatusReason)
			}
			w.waitFor(t, "exit codes of both", func() bool {
				j2, _ := w.db.Ent.Job.Query().Where(job.ID(j.ID)).WithServices().Only(w.sys)
				for _, s := range j2.Edges.Services {
					if s.ExitCode == nil {
						return false
					}
				}
				return true
			})
		})

		t.Run("cancel stops the job on the node", func(t *testing.T) {
			j := w.runOn(t, st.NodeID, jobspec.Service{Name: "main", Command: []string{"sleep", "600"}, CPU: 1, MemoryMiB: 64})
			w.waitFor(t, "job running", func() bool {
				j2, err := w.db.Ent.Job.Get(w.sys, j.ID)
				return err == nil && j2.Status == job.StatusRunning
			})
			if _, err := w.jobs.Cancel(w.admin, j.ID); err != nil {
				t.Fatal(err)
			}
			w.waitFor(t, "the process to be stopped", func() bool {
				j2, _ := w.db.Ent.Job.Query().Where(job.ID(j.ID)).WithServices().Only(w.sys)
				return j2.Edges.Services[0].ExitCode != nil
			})
		})

		t.Run("a job survives a broken connection", func(t *testing.T) {
			j := w.runOn(t, st.NodeID, jobspec.Service{Name: "main", Command: []string{"sh", "-c", "echo before; sleep 1; echo after"}, CPU: 1, MemoryMiB: 64})
			w.waitFor(t, "job running", func() bool {
				j2, err := w.db.Ent.Job.Get(w.sys, j.ID)
				return err == nil && j2.Status == job.StatusRunning
			})
			w.cut()
			if j = w.waitEnded(t, j.ID); j.Status != job.StatusComplete {
				t.Fatalf("job = %s %q", j.Status, j.StatusReason)
			}
			// Both lines, once each (the runtime may add notices of its own).
			w.waitFor(t, "both lines", func() bool {
				n, err := w.db.Ent.LogLine.Query().Where(logline.JobID(j.ID), logline.TextIn("before", "after")).Count(w.sys)
				return err == nil && n == 2
			})
		})

		t.Run("forged credential refused", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			for _, h := range []string{"Bearer lv9_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "", "Basic x"} {
				c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.http.URL, "http")+"/agent",
					&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {h}}})
				if err == nil {
					c.CloseNow()
					t.Fatalf("%q: connected", h)
				}
				if resp == nil || resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%q: %v; want 401", h, err)
				}
			}
		})

		t.Run("malformed messages close only their connection", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			for _, msg := range []string{
				"not json",
				`{"v":1,"type":"start","body":{"jobId":"job_x","services":[{"name":"a","command":["true"]}]}}`, // wrong direction
				`{"v":99,"type":"hello","body":{}}`,
				`{"v":1,"type":"heartbeat","body":{"time":"2026-01-01T00:00:00Z"}}`, // not hello first
				strings.Repeat("x", 2<<20),                                          // oversized
			} {
				c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.http.URL, "http")+"/agent",
					&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + st.Credential}}})
				if err != nil {
					t.Fatal(err)
				}
				_ = c.Write(ctx, websocket.MessageText, []byte(msg))
				_, _, err = c.Read(ctx)
				if err == nil {
					t.Errorf("%.40q: connection still open", msg)
				}
				c.CloseNow()
			}
			// The real agent's connection is undisturbed: work still runs.
			j := w.runOn(t, st.NodeID, jobspec.Service{Name: "main", Command: []string{"true"}, CPU: 1, MemoryMiB: 64})
			if j = w.waitEnded(t, j.ID); j.Status != job.StatusComplete {
				t.Fatalf("job after bad connections = %s %q", j.Status, j.StatusReason)
			}
		})
	})
}

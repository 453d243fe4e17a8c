package relay_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/execution"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/sandboxes"
	"github.com/levers9/levers9/internal/wire"
)

// TestRelaySandbox: a sandbox made by the sandboxes layer runs on the
// node (process runtime) and takes execs from its owner and admins,
// each recorded with its exit code; another tenant learns nothing, a
// member not the owner gets no terminal; a snapshot on the process
// runtime is refused clearly and its blueprint FAILED.
func TestRelaySandbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		var sb *sandboxes.Service
		w := newRelayWorld(t, dburl, worldOptions{snapshots: func(w *relayWorld) relay.Snapshots {
			sb = &sandboxes.Service{DB: w.db, Jobs: w.jobs, Log: w.log,
				Blueprints: &blueprints.Service{DB: w.db, Jobs: w.jobs, Log: w.log}}
			return sb
		}})
		j, err := sb.Create(w.tn.As(w.alice), sandboxes.Input{Name: "sb"})
		if err != nil {
			t.Fatal(err)
		}
		j = w.place(t, j)
		svc := sandboxes.ServiceName

		t.Run("exec by the owner is recorded", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			cmd := []string{"sh", "-c", "echo out; exit 3"}
			c, resp, err := w.dialStream(t, ctx, execPath(j.ID, svc, cmd...), w.aliceTok)
			if err != nil {
				noTerminals(t, resp)
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			if err := wire.WriteFrame(c, wire.FrameCloseStdin, nil); err != nil {
				t.Fatal(err)
			}
			stdout, _, last := readTerminal(t, c)
			if stdout != "out\n" || last != (frame{wire.FrameExit, string(wire.ExitPayload(3))}) {
				t.Fatalf("stdout %q, last %v; want out and exit 3", stdout, last)
			}
			waitFor(t, "the execution's end", func() bool {
				e, err := w.db.Ent.Execution.Query().Where(execution.JobID(j.ID)).Only(w.sys)
				if err != nil {
					return false
				}
				if e.EndedAt == nil {
					return false
				}
				if e.UserID != w.alice.ID || !slices.Equal(e.Command, cmd) || e.Service != svc || e.ExitCode == nil || *e.ExitCode != 3 ||
					e.TenantID != j.TenantID || e.EnvironmentID != j.EnvironmentID {
					t.Fatalf("execution %v; want alice's %q ended with 3", e, cmd)
				}
				return true
			})
		})

		refusals := []struct {
			name, method, path, token string
			status                    int
		}{
			{"another tenant, exec", http.MethodGet, execPath(j.ID, svc, "true"), w.strangerTok, 404},
			{"another tenant, snapshot", http.MethodPost, "/streams/snapshot/" + j.ID + "/" + svc, w.strangerTok, 404},
			{"a member not the owner, exec", http.MethodGet, execPath(j.ID, svc, "true"), w.bobTok, 403},
			{"a member not the owner, snapshot", http.MethodPost, "/streams/snapshot/" + j.ID + "/" + svc, w.bobTok, 403},
		}
		for _, tc := range refusals {
			t.Run(tc.name, func(t *testing.T) {
				hdr := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
					"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
				resp, err := w.do(t, tc.method, tc.path, tc.token, hdr)
				if err != nil {
					t.Fatal(err)
				}
				if r := readRefusal(t, resp); resp.StatusCode != tc.status {
					t.Fatalf("%d %+v; want %d", resp.StatusCode, r, tc.status)
				}
			})
		}
		t.Run("nothing recorded for refusals", func(t *testing.T) {
			if n, err := w.db.Ent.Execution.Query().Where(execution.JobID(j.ID)).Count(w.sys); err != nil || n != 1 {
				t.Errorf("%d executions (%v); want only the owner's", n, err)
			}
			if n, err := w.db.Ent.Blueprint.Query().Count(w.sys); err != nil || n != 0 {
				t.Errorf("%d blueprints (%v); want none", n, err)
			}
		})

		t.Run("snapshot on the process runtime", func(t *testing.T) {
			resp, err := w.do(t, http.MethodPost, "/streams/snapshot/"+j.ID+"/"+svc, w.adminTk, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := readRefusal(t, resp)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(r.Error, "container node") {
				t.Fatalf("%d %+v; want 400 saying snapshots need a container node", resp.StatusCode, r)
			}
			bp, err := w.db.Ent.Blueprint.Query().Where(blueprint.BuildJobID(j.ID)).Only(w.sys)
			if err != nil || bp.State != blueprint.StateFAILED || bp.Source != blueprint.SourceSNAPSHOT || !strings.Contains(bp.Failure, "container node") {
				t.Fatalf("blueprint %v, %v; want a FAILED snapshot saying why", bp, err)
			}
		})
	})
}

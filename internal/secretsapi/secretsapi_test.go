package secretsapi_test

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/secrets"
	"github.com/levers9/levers9/internal/secretsapi"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const hidden = "hf_very_secret_token_value"

// A node gets the secrets of a function container placed on it whose job
// has not ended, and nothing else: other nodes, other tenants' nodes,
// jobs that are not function containers and ended jobs all look missing.
func TestAgentSecrets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		acme := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		other := fixture.NewTenant(t, acme.DB, fixture.TenantOptions{Slug: "globex"})
		c, sys := acme.DB.Ent, fixture.Sys()
		key := make([]byte, secrets.KeySize)
		_, _ = rand.Read(key)
		keys, err := secrets.NewKeyring(key)
		if err != nil {
			t.Fatal(err)
		}
		svc := &secrets.Service{DB: acme.DB, Log: fixture.Log(), Keys: keys}
		if _, err := svc.Create(acme.AsAdmin(), "hf", map[string]string{"HF_TOKEN": hidden}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Create(acme.AsAdmin(), "db", map[string]string{"PGPASSWORD": "pw"}, false); err != nil {
			t.Fatal(err)
		}
		creds, nodeIDs := map[string]string{}, map[string]string{}
		for _, name := range []string{"gpu-1", "gpu-2"} {
			n := acme.AddNode(t, fixture.Node{Name: name, Offline: true})
			creds[name], nodeIDs[name] = acme.NodeCredential(t, n.ID), n.ID
		}
		stranger := other.NodeCredential(t, other.AddNode(t, fixture.Node{Name: "gpu-1", Offline: true}).ID)

		a := c.App.Create().SetTenantID(acme.ID).SetEnvironmentID(acme.Env).SetName("vision").
			SetCodeHash(strings.Repeat("a", 64)).SetOwnerID(acme.Admin.ID).SaveX(sys)
		newFn := func(name string, secretNames ...string) *ent.Function {
			return c.Function.Create().SetTenantID(acme.ID).SetEnvironmentID(acme.Env).SetAppID(a.ID).
				SetName(name).SetModule("app").SetQualname(name).SetOwnerID(acme.Admin.ID).
				SetQueueID(acme.DefaultQueue).SetSecrets(secretNames).SaveX(sys)
		}
		// newJob places a job on gpu-1: a function container of f when f
		// is given.
		newJob := func(f *ent.Function, status job.Status) string {
			var rn *wire.Runner
			var ctr *ent.Container
			if f != nil {
				ctr = c.Container.Create().SetTenantID(acme.ID).SetEnvironmentID(acme.Env).
					SetFunctionID(f.ID).SetOwnerID(f.OwnerID).SaveX(sys)
				rn = &wire.Runner{ContainerID: ctr.ID, FunctionID: f.ID, CodeHash: a.CodeHash, Secrets: f.Secrets}
			}
			j := c.Job.Create().SetTenantID(acme.ID).SetEnvironmentID(acme.Env).
				SetQueueID(acme.DefaultQueue).SetOwnerID(acme.Admin.ID).SetStatus(status).
				SetSpec(jobspec.Job{Queue: "default", Services: []jobspec.Service{{Name: "main", Command: []string{"python3"}}}, Runner: rn}).
				SaveX(sys)
			c.Service.Create().SetTenantID(acme.ID).SetEnvironmentID(acme.Env).
				SetJobID(j.ID).SetName("main").SetNodeID(nodeIDs["gpu-1"]).SaveX(sys)
			if ctr != nil {
				c.Container.UpdateOne(ctr).SetJobID(j.ID).ExecX(sys)
			}
			return j.ID
		}
		download := newFn("download", "hf", "db")
		plainFn := newJob(newFn("plain"), job.StatusRunning)
		fn := newJob(download, job.StatusRunning)
		starting := newJob(download, job.StatusPending)
		ended := newJob(download, job.StatusComplete)
		notFn := newJob(nil, job.StatusRunning)
		// A container whose runner is up got its values when it started.
		up := newJob(download, job.StatusRunning)
		c.Container.Update().Where(container.JobID(up)).SetState(container.StateREADY).ExecX(sys)

		srv := httptest.NewServer((&secretsapi.API{Ent: c, Secrets: svc, Log: fixture.Log()}).Handler())
		t.Cleanup(srv.Close)
		get := func(cred, jobID string) (int, string) {
			req, _ := http.NewRequest("GET", srv.URL+"/agent/secrets", nil)
			if cred != "" {
				req.Header.Set("Authorization", "Bearer "+cred)
			}
			req.Header.Set(wire.JobHeader, jobID)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		for _, tc := range []struct {
			name, cred, job string
			want            int
			env             string
		}{
			{"the job's node", creds["gpu-1"], fn, http.StatusOK, `[{"name":"HF_TOKEN","value":"` + hidden + `"},{"name":"PGPASSWORD","value":"pw"}]`},
			{"a job not started yet", creds["gpu-1"], starting, http.StatusOK, ""},
			{"a function without secrets", creds["gpu-1"], plainFn, http.StatusOK, `[]`},
			{"another node", creds["gpu-2"], fn, http.StatusNotFound, ""},
			{"another tenant's node", stranger, fn, http.StatusNotFound, ""},
			{"not a function's job", creds["gpu-1"], notFn, http.StatusNotFound, ""},
			{"an ended job", creds["gpu-1"], ended, http.StatusNotFound, ""},
			{"a container already up", creds["gpu-1"], up, http.StatusNotFound, ""},
			{"no job header", creds["gpu-1"], "", http.StatusNotFound, ""},
			{"an unknown job", creds["gpu-1"], "job_nope", http.StatusNotFound, ""},
			{"a user token", acme.Token(t, acme.Admin), fn, http.StatusUnauthorized, ""},
			{"no credential", "", fn, http.StatusUnauthorized, ""},
		} {
			status, body := get(tc.cred, tc.job)
			if status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
				continue
			}
			if status != http.StatusOK && strings.Contains(body, hidden) {
				t.Errorf("%s: a refusal carries the value: %s", tc.name, body)
			}
			if tc.env != "" {
				var r struct{ Env json.RawMessage }
				if err := json.Unmarshal([]byte(body), &r); err != nil || string(r.Env) != tc.env {
					t.Errorf("%s: env %s, want %s (%v)", tc.name, r.Env, tc.env, err)
				}
			}
		}
		// Each use is audited for the function's owner, without values.
		evs := c.AuditEvent.Query().Where(auditevent.Action(secrets.ActionUse)).AllX(sys)
		if len(evs) != 4 { // two secrets, for fn and for starting
			t.Errorf("%d secret.use events, want 4", len(evs))
		}
		for _, e := range evs {
			b, _ := json.Marshal(e.Details)
			if e.ActorID != acme.Admin.ID || e.Details["function"] != download.ID || strings.Contains(string(b), hidden) {
				t.Errorf("use audited as %s with %s", e.ActorID, b)
			}
		}
		// A secret deleted since the deploy fails the start, naming it.
		if _, err := svc.Delete(acme.AsAdmin(), "db"); err != nil {
			t.Fatal(err)
		}
		if status, body := get(creds["gpu-1"], fn); status != http.StatusNotFound || !strings.Contains(body, "db") || strings.Contains(body, hidden) {
			t.Errorf("with a deleted secret: %d %s", status, body)
		}
	})
}

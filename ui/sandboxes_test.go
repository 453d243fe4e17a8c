package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// sandbox stores a sandbox job as v, with a declared port 8888.
func (e *env) sandbox(v *viewer.Viewer, name string) *ent.Job {
	e.t.Helper()
	j, err := e.jobs.Submit(viewer.NewContext(context.Background(), v), jobspec.Job{Name: name, Queue: "default", Sandbox: true,
		Services: []jobspec.Service{{Name: "sandbox", Command: []string{"sleep", "1"}, CPU: 0.1, MemoryMiB: 64,
			Ports: []jobspec.Port{{Name: "p8888", Port: 8888}}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// The Sandboxes page lists the tenant's SANDBOX jobs (not other jobs, not
// another tenant's) with tunnels while running and Terminate; the job
// page shows the exec history; the Blueprints page the tenant's
// blueprints with their steps.
func TestDashboardSandboxesAndBlueprints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		sys := viewer.SystemContext(context.Background())
		sb := e.sandbox(e.admin, "notebook")
		plain := e.submit(e.admin, "plainjob", "true")
		theirs := e.sandbox(e.other, "theirbox")
		if _, err := e.db.Ent.Job.UpdateOneID(sb.ID).SetStatus(job.StatusRunning).Save(sys); err != nil {
			t.Fatal(err)
		}
		code := 3
		if _, err := e.db.Ent.Execution.Create().SetTenantID(e.tenant.ID).SetEnvironmentID(sb.EnvironmentID).SetJobID(sb.ID).
			SetService("sandbox").SetUserID(e.admin.UserID).SetCommand([]string{"python", "-c", "print(1+1)"}).SetExitCode(code).Save(sys); err != nil {
			t.Fatal(err)
		}
		key := strings.Repeat("c", 64)
		if _, err := e.db.Ent.Blueprint.Create().SetTenantID(e.tenant.ID).SetKey(key).SetFirstKey(key).
			SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "python:3.12-slim"},
				{Key: key, Kind: wire.StepPip, Packages: []string{"torch==2.5.1", "pillow"}}}).
			SetImage("levers9-bp/" + e.tenant.ID + ":" + key).SetOwnerID(e.admin.UserID).SetBuildJobID(plain.ID).
			SetExportBytes(3 << 20).Save(sys); err != nil {
			t.Fatal(err)
		}
		okey := strings.Repeat("d", 64)
		if _, err := e.db.Ent.Blueprint.Create().SetTenantID(theirs.TenantID).SetKey(okey).SetFirstKey(okey).
			SetSteps([]wire.BuildStep{{Key: okey, Kind: wire.StepRegistry, Ref: "busybox"}}).
			SetImage("levers9-bp/" + theirs.TenantID + ":" + okey).SetOwnerID(e.other.UserID).Save(sys); err != nil {
			t.Fatal(err)
		}

		b := e.browser()
		b.signIn(adminEmail)
		code, body := b.get("/sandboxes")
		if code != http.StatusOK {
			t.Fatalf("GET /sandboxes: %d", code)
		}
		for _, want := range []string{"notebook", `id="terminate-` + sb.ID + `"`, "/relay/" + sb.ID, adminEmail, `href="/sandboxes"`} {
			if !strings.Contains(body, want) {
				t.Errorf("Sandboxes page lacks %q", want)
			}
		}
		for _, unwanted := range []string{"plainjob", "theirbox", theirs.ID} {
			if strings.Contains(body, unwanted) {
				t.Errorf("Sandboxes page shows %q", unwanted)
			}
		}
		code, body = b.get("/jobs/" + sb.ID)
		if code != http.StatusOK {
			t.Fatalf("GET job page: %d", code)
		}
		for _, want := range []string{`id="exec-history"`, "python -c print(1+1)", `<td class="exit">3</td>`} {
			if !strings.Contains(body, want) {
				t.Errorf("job page lacks %q", want)
			}
		}
		if _, body := b.get("/jobs/" + plain.ID); strings.Contains(body, "exec-history") {
			t.Error("a job without executions shows an exec history")
		}
		code, body = b.get("/blueprints")
		if code != http.StatusOK {
			t.Fatalf("GET /blueprints: %d", code)
		}
		for _, want := range []string{key[:12], "FROM python:3.12-slim", "PIP torch==2.5.1 pillow", "/jobs/" + plain.ID, "BUILDING", "0 of 2"} {
			if !strings.Contains(body, want) {
				t.Errorf("Blueprints page lacks %q", want)
			}
		}
		if strings.Contains(body, okey[:12]) {
			t.Error("Blueprints page shows another tenant's blueprint")
		}
		// Terminate cancels the sandbox.
		if resp, _ := b.post("/jobs/"+sb.ID+"/cancel", nil); resp.StatusCode >= 400 {
			t.Fatalf("terminate: %d", resp.StatusCode)
		}
		if j, err := e.db.Ent.Job.Get(sys, sb.ID); err != nil || j.Status != job.StatusCancelled {
			t.Errorf("after Terminate the sandbox is %v (%v), want CANCELLED", j.Status, err)
		}
	})
}

// A member sees another member's sandbox without Terminate, and posting
// the cancel anyway leaves it running.
func TestDashboardSandboxTerminateIsTheOwners(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		sys := viewer.SystemContext(context.Background())
		sb := e.sandbox(e.admin, "adminbox")
		if _, err := e.db.Ent.Job.UpdateOneID(sb.ID).SetStatus(job.StatusRunning).Save(sys); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn(memberEmail)
		code, body := b.get("/sandboxes")
		if code != http.StatusOK {
			t.Fatalf("GET /sandboxes: %d", code)
		}
		if !strings.Contains(body, "adminbox") {
			t.Error("a member does not see the environment's sandbox")
		}
		if strings.Contains(body, `id="terminate-`+sb.ID+`"`) {
			t.Error("a member is offered Terminate on another's sandbox")
		}
		b.post("/jobs/"+sb.ID+"/cancel", nil)
		if j, err := e.db.Ent.Job.Get(sys, sb.ID); err != nil {
			t.Fatal(err)
		} else if j.Status != job.StatusRunning {
			t.Errorf("after a member's cancel the admin's sandbox is %v, want RUNNING", j.Status)
		}
	})
}

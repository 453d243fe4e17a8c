package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/sandboxes"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// withBlueprints wires the blueprints and sandboxes services as the
// server does.
func withBlueprints(t testing.TB) func(*graph.Resolver) {
	return func(r *graph.Resolver) {
		// No blob store: graph may not import storage (layering), and
		// COPY's code check, which needs one, is internal/blueprints' test.
		r.BlueprintService = &blueprints.Service{DB: r.DB, Jobs: r.JobService, Log: r.Log}
		r.SandboxService = &sandboxes.Service{DB: r.DB, Jobs: r.JobService, Blueprints: r.BlueprintService, Log: r.Log}
	}
}

// TestBlueprintIsolation: tenant beta reads none of alpha's blueprints,
// by node(id), blueprint(id) or the blueprints connection; alpha reads
// its own with steps and build job.
func TestBlueprintIsolation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withBlueprints(t))
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		jobID := e.submit(a)
		ctx := viewer.SystemContext(context.Background())
		key := strings.Repeat("b", 64)
		bp, err := e.db.Ent.Blueprint.Create().SetTenantID(a.ent.ID).SetKey(key).SetFirstKey(key).
			SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "python:3.12-slim"}}).
			SetImage("levers9-bp/" + a.ent.ID + ":" + key).SetOwnerID(a.admin.ID).SetBuildJobID(jobID).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		const one = `query($id: ID!) { blueprint(id: $id) { id key state steps { key kind summary } buildJob { id } } }`
		r := e.gql(a.memberToken, one, vars{"id": bp.ID})
		r.ok(t)
		var got struct {
			Blueprint struct {
				ID, Key, State string
				Steps          []struct{ Key, Kind, Summary string }
				BuildJob       *struct{ ID string }
			}
		}
		r.decode(t, &got)
		if got.Blueprint.ID != bp.ID || len(got.Blueprint.Steps) != 1 || got.Blueprint.Steps[0].Summary != "FROM python:3.12-slim" ||
			got.Blueprint.BuildJob == nil || got.Blueprint.BuildJob.ID != jobID || got.Blueprint.State != "BUILDING" {
			t.Errorf("alpha's member reads its blueprint as %+v", got.Blueprint)
		}
		for _, q := range []string{one, `query($id: ID!) { node(id: $id) { id ... on Blueprint { key } } }`} {
			r := e.gql(b.adminToken, q, vars{"id": bp.ID})
			if strings.Contains(string(r.Data), bp.ID) || strings.Contains(string(r.Data), key) {
				t.Errorf("beta reads alpha's blueprint: %s", r.Data)
			}
			if r.code() != "NOT_FOUND" {
				t.Errorf("beta's %s: code %q, want NOT_FOUND", q, r.code())
			}
		}
		for tok, want := range map[string]int{a.memberToken: 1, b.adminToken: 0} {
			r := e.gql(tok, `{ blueprints(first: 10) { totalCount edges { node { id } } } }`, nil)
			r.ok(t)
			var out struct{ Blueprints struct{ TotalCount int } }
			r.decode(t, &out)
			if out.Blueprints.TotalCount != want {
				t.Errorf("blueprints: %d, want %d (%s)", out.Blueprints.TotalCount, want, r.Data)
			}
		}
	})
}

// TestSandboxExecutionsAndTunnels: a job's executions, newest first with
// their user, are its tenant's only; a running job's declared ports are
// tunnels through the relay.
func TestSandboxExecutionsAndTunnels(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, func(r *graph.Resolver) { r.PublicURL = "https://l9.test/" })
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		r := e.gql(a.memberToken, `mutation { submitJob(spec: {queue: "default", services: [{name: "sandbox", command: ["true"], cpu: 1,
			ports: [{name: "p8888", port: 8888}, {name: "any"}]}]}) { id } }`, nil)
		r.ok(t)
		var sub struct{ SubmitJob struct{ ID string } }
		r.decode(t, &sub)
		jobID := sub.SubmitJob.ID
		ctx := viewer.SystemContext(context.Background())
		var ids []string
		for i := range 3 {
			code := i
			x, err := e.db.Ent.Execution.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetJobID(jobID).
				SetService("sandbox").SetUserID(a.member.ID).SetCommand([]string{"echo", fmt.Sprint(i)}).SetExitCode(code).Save(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, x.ID)
		}
		const q = `query($id: ID!) { node(id: $id) { ... on Job { executions(last: 2) { id command exitCode user { id } } tunnels { port url } } } }`
		r = e.gql(a.memberToken, q, vars{"id": jobID})
		r.ok(t)
		var out struct {
			Node struct {
				Executions []struct {
					ID       string
					Command  []string
					ExitCode *int
					User     *struct{ ID string }
				}
				Tunnels []struct {
					Port int
					URL  string
				}
			}
		}
		r.decode(t, &out)
		if n := len(out.Node.Executions); n != 2 {
			t.Fatalf("executions(last: 2): %d, want 2 (%s)", n, r.Data)
		}
		for _, x := range out.Node.Executions {
			if x.User == nil || x.User.ID != a.member.ID || x.ExitCode == nil {
				t.Errorf("execution %+v: want user %s and an exit code", x, a.member.ID)
			}
		}
		if len(out.Node.Tunnels) != 0 {
			t.Errorf("a pending job has tunnels %+v", out.Node.Tunnels)
		}
		if _, err := e.db.Ent.Job.UpdateOneID(jobID).SetStatus(job.StatusRunning).Save(ctx); err != nil {
			t.Fatal(err)
		}
		r = e.gql(a.memberToken, q, vars{"id": jobID})
		r.ok(t)
		r.decode(t, &out)
		want := "https://l9.test/relay/" + jobID + "/sandbox/8888/"
		if len(out.Node.Tunnels) != 1 || out.Node.Tunnels[0].Port != 8888 || out.Node.Tunnels[0].URL != want {
			t.Errorf("tunnels %+v, want one of port 8888 at %s", out.Node.Tunnels, want)
		}
		for _, id := range append(ids, jobID) {
			r := e.gql(b.adminToken, `query($id: ID!) { node(id: $id) { id ... on Execution { command } } }`, vars{"id": id})
			if r.code() != "NOT_FOUND" || strings.Contains(string(r.Data), id) {
				t.Errorf("beta reads %s: %s %+v", id, r.Data, r.Errors)
			}
		}
	})
}

// TestCreateSandboxBadGPU: a GPU request functions could not read is
// refused naming gpu, and no job is written.
func TestCreateSandboxBadGPU(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("alpha")
		r := e.gql(a.memberToken, `mutation { createSandbox(input: {image: "busybox", gpu: "H100:x"}) { id } }`, nil)
		if r.code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "gpu") {
			t.Errorf("bad gpu: %+v, want BAD_USER_INPUT naming gpu", r.Errors)
		}
		n, err := e.db.Ent.Job.Query().Count(viewer.SystemContext(context.Background()))
		if err != nil || n != 0 {
			t.Errorf("%d jobs written (%v), want none", n, err)
		}
	})
}

const buildBlueprintQ = `mutation($i: BuildBlueprintInput!) { buildBlueprint(input: $i) {
	id key state stepsBuilt steps { key kind summary } buildJob { id kind } } }`

// TestBuildBlueprint: a bad step is refused naming its field, writing
// nothing; good steps make a BUILDING blueprint with a BUILD job, and the
// same steps again are the same blueprint.
func TestBuildBlueprint(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withBlueprints(t))
		a := e.newTenant("alpha")
		sys := viewer.SystemContext(context.Background())
		base := vars{"kind": "REGISTRY", "ref": "python:3.12-slim"}
		for name, c := range map[string]struct {
			steps []vars
			field string
		}{
			"no steps":           {[]vars{}, "steps"},
			"pip without a name": {[]vars{base, {"kind": "PIP"}}, "steps[1]"},
			"base not first":     {[]vars{{"kind": "APT", "packages": []string{"ffmpeg"}}}, "steps[0]"},
			"second base":        {[]vars{base, base}, "steps[1]"},
		} {
			r := e.gql(a.memberToken, buildBlueprintQ, vars{"i": vars{"steps": c.steps}})
			if r.code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message+fmt.Sprint(r.Errors[0].Extensions), c.field) {
				t.Errorf("%s: %+v, want BAD_USER_INPUT naming %s", name, r.Errors, c.field)
			}
		}
		if n, err := e.db.Ent.Blueprint.Query().Count(sys); err != nil || n != 0 {
			t.Errorf("refused builds wrote %d blueprints (%v)", n, err)
		}
		if n, err := e.db.Ent.Job.Query().Count(sys); err != nil || n != 0 {
			t.Errorf("refused builds wrote %d jobs (%v)", n, err)
		}

		steps := []vars{base, {"kind": "PIP", "packages": []string{"torch==2.5.1", "pillow"}},
			{"kind": "RUN", "commands": []string{"python -c 'import torch'"}}, {"kind": "WORKDIR", "path": "/app"}}
		type built struct {
			BuildBlueprint struct {
				ID, Key, State string
				Steps          []struct{ Key, Kind, Summary string }
				BuildJob       *struct{ ID, Kind string }
			}
		}
		r := e.gql(a.memberToken, buildBlueprintQ, vars{"i": vars{"steps": steps}})
		r.ok(t)
		var first built
		r.decode(t, &first)
		b := first.BuildBlueprint
		want := []string{"FROM python:3.12-slim", "PIP torch==2.5.1 pillow", "RUN python -c 'import torch'", "WORKDIR /app"}
		if b.State != "BUILDING" || len(b.Steps) != len(want) || b.BuildJob == nil || b.BuildJob.Kind != "BUILD" ||
			b.Key != b.Steps[len(b.Steps)-1].Key {
			t.Fatalf("built %+v", b)
		}
		for i, s := range b.Steps {
			if s.Summary != want[i] || len(s.Key) != 64 {
				t.Errorf("step %d: %+v, want summary %q and a key", i, s, want[i])
			}
		}
		r = e.gql(a.memberToken, buildBlueprintQ, vars{"i": vars{"steps": steps}})
		r.ok(t)
		var again built
		r.decode(t, &again)
		if again.BuildBlueprint.ID != b.ID {
			t.Errorf("the same steps again: blueprint %s, want %s", again.BuildBlueprint.ID, b.ID)
		}
	})
}

// TestCreateSandbox: a sandbox is an interactive SANDBOX job with its
// ports declared; another tenant cannot read it.
func TestCreateSandbox(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withBlueprints(t))
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		r := e.gql(a.memberToken, `mutation { createSandbox(input: {name: "nb", image: "busybox", ports: [8888], timeoutSeconds: 600}) {
			id name kind interactive timeoutSeconds services { name ports { name port } } } }`, nil)
		r.ok(t)
		var out struct {
			CreateSandbox struct {
				ID, Name, Kind string
				Interactive    bool
				TimeoutSeconds int
				Services       []struct {
					Name  string
					Ports []struct {
						Name string
						Port int
					}
				}
			}
		}
		r.decode(t, &out)
		j := out.CreateSandbox
		if j.Kind != "SANDBOX" || !j.Interactive || j.TimeoutSeconds != 600 || len(j.Services) != 1 ||
			j.Services[0].Name != "sandbox" || len(j.Services[0].Ports) != 1 || j.Services[0].Ports[0].Port != 8888 {
			t.Errorf("createSandbox: %+v", j)
		}
		r = e.gql(b.adminToken, `query($id: ID!) { node(id: $id) { id } }`, vars{"id": j.ID})
		if r.code() != "NOT_FOUND" || strings.Contains(string(r.Data), j.ID) {
			t.Errorf("beta reads alpha's sandbox: %s %+v", r.Data, r.Errors)
		}
		r = e.gql(b.adminToken, `{ jobs(first: 10, where: {kind: SANDBOX}) { totalCount } }`, nil)
		r.ok(t)
		if strings.Contains(string(r.Data), `"totalCount":1`) {
			t.Errorf("beta lists alpha's sandbox: %s", r.Data)
		}
	})
}

// A page of jobs with their executions and tunnels costs one query of
// executions and one of services, whatever the number of jobs; a job
// crowded out of the batch by a busier one still gets its own.
func TestJobExecutionsAreBatched(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		var log queryLog
		e := newEnv(t, url, withQueryLog(&log))
		a := e.newTenant("batch")
		sys := viewer.SystemContext(context.Background())
		var jobs []string
		for i := range 4 {
			id := e.submit(a)
			jobs = append(jobs, id)
			if _, err := e.db.Ent.Job.UpdateOneID(id).SetStatus(job.StatusRunning).Save(sys); err != nil {
				t.Fatal(err)
			}
			for k := range 1 + 3*(i%2) { // jobs 1 and 3 are busier
				if _, err := e.db.Ent.Execution.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetJobID(id).
					SetService("main").SetCommand([]string{"echo", fmt.Sprint(k)}).Save(sys); err != nil {
					t.Fatal(err)
				}
			}
		}
		log.reset()
		r := e.gql(a.memberToken, `{ jobs(first: 100) { edges { node { id executions(last: 2) { id } tunnels { port } } } } }`, nil)
		r.ok(t)
		var out struct {
			Jobs struct {
				Edges []struct {
					Node struct {
						ID         string
						Executions []struct{ ID string }
					}
				}
			}
		}
		r.decode(t, &out)
		if len(out.Jobs.Edges) != 4 {
			t.Fatalf("%d jobs: %s", len(out.Jobs.Edges), r.Data)
		}
		for _, e := range out.Jobs.Edges {
			want := 1
			if e.Node.ID == jobs[1] || e.Node.ID == jobs[3] {
				want = 2
			}
			if len(e.Node.Executions) != want {
				t.Errorf("job %s: %d executions, want %d", e.Node.ID, len(e.Node.Executions), want)
			}
		}
		// 4 jobs × last 2 = limit 8 of 10 rows: the short jobs are read again.
		if n := log.count(`FROM "executions"`); n > 1+4 {
			t.Errorf("%d queries of executions, want at most 5", n)
		}
		if n := log.count(`FROM "services"`); n != 1 {
			t.Errorf("%d queries of services, want 1", n)
		}
		log.reset()
		r = e.gql(a.memberToken, `{ jobs(first: 100) { edges { node { id executions(last: 5) { id } } } } }`, nil)
		r.ok(t)
		if n := log.count(`FROM "executions"`); n != 1 {
			t.Errorf("%d queries of executions for last: 5, want 1", n)
		}
	})
}

// FunctionInput's ports, command and blueprint reach the deployed
// function; another tenant's blueprint is refused naming the field.
func TestDeployBoxWithBlueprint(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withDeployments, withBlueprints(t), func(r *graph.Resolver) { r.Functions.Blueprints = r.BlueprintService })
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		sys := viewer.SystemContext(context.Background())
		ready := func(tn *tenant, key string) string {
			bp, err := e.db.Ent.Blueprint.Create().SetTenantID(tn.ent.ID).SetKey(key).SetFirstKey(key).
				SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "python:3.12-slim"}}).
				SetImage("levers9-bp/" + tn.ent.ID + ":" + key).SetOwnerID(tn.admin.ID).SetState("READY").Save(sys)
			if err != nil {
				t.Fatal(err)
			}
			return bp.ID
		}
		mine, theirs := ready(a, strings.Repeat("e", 64)), ready(b, strings.Repeat("f", 64))
		deploy := func(bp string) response {
			return e.gql(a.adminToken, `mutation($i: DeployAppInput!) { deployApp(input: $i) { functions { kind ports command blueprintID } } }`,
				vars{"i": vars{"name": "web", "code": strings.Repeat("cd", 32), "deploy": true, "functions": []vars{{
					"name": "srv", "module": "app", "qualname": "srv", "queue": "default", "kind": "BOX",
					"ports": []int{8080}, "command": []string{"python", "-m", "http.server", "8080"}, "blueprint": bp}}}})
		}
		r := deploy(mine)
		r.ok(t)
		var out struct {
			DeployApp struct {
				Functions []struct {
					Kind        string
					Ports       []int
					Command     []string
					BlueprintID string
				}
			}
		}
		r.decode(t, &out)
		if fs := out.DeployApp.Functions; len(fs) != 1 || fs[0].Kind != "BOX" || fmt.Sprint(fs[0].Ports) != "[8080]" ||
			len(fs[0].Command) != 4 || fs[0].BlueprintID != mine {
			t.Errorf("deployed %+v", fs)
		}
		r = deploy(theirs)
		if r.code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message+fmt.Sprint(r.Errors[0].Extensions), "blueprint") {
			t.Errorf("another tenant's blueprint: %+v, want BAD_USER_INPUT naming blueprint", r.Errors)
		}
	})
}

// A page of blueprints reads their build jobs in one query, and a job's
// exec history reads who ran the commands in one, whatever the count.
func TestBlueprintBuildJobsAndExecutionUsersAreBatched(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		var log queryLog
		e := newEnv(t, url, withQueryLog(&log))
		a := e.newTenant("batchbp")
		sys := viewer.SystemContext(context.Background())
		id := e.submit(a)
		for i := range 4 {
			jobID := e.submit(a)
			key := fmt.Sprintf("%064x", i+1)
			if _, err := e.db.Ent.Blueprint.Create().SetTenantID(a.ent.ID).SetKey(key).SetFirstKey(key).
				SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "busybox"}}).
				SetImage("levers9-bp/" + a.ent.ID + ":" + key).SetOwnerID(a.admin.ID).SetBuildJobID(jobID).Save(sys); err != nil {
				t.Fatal(err)
			}
			who := a.admin.ID
			if i%2 == 1 {
				who = a.member.ID
			}
			if _, err := e.db.Ent.Execution.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetJobID(id).
				SetService("main").SetUserID(who).SetCommand([]string{"echo", fmt.Sprint(i)}).Save(sys); err != nil {
				t.Fatal(err)
			}
		}
		count := func(q, table string) int {
			t.Helper()
			log.reset()
			e.gql(a.memberToken, q, nil).ok(t)
			return log.count(`FROM "` + table + `"`)
		}
		bps := `{ blueprints(first: 10) { edges { node { id } } } }`
		withJobs := `{ blueprints(first: 10) { edges { node { id buildJob { id } } } } }`
		if n, base := count(withJobs, "jobs"), count(bps, "jobs"); n-base != 1 {
			t.Errorf("4 blueprints' build jobs: %d queries of jobs, want 1", n-base)
		}
		r := e.gql(a.memberToken, withJobs, nil)
		r.ok(t)
		if got := strings.Count(string(r.Data), `"buildJob":{"id"`); got != 4 {
			t.Errorf("%d build jobs, want 4: %s", got, r.Data)
		}
		xs := fmt.Sprintf(`{ node(id: %q) { ... on Job { executions { id } } } }`, id)
		withUsers := fmt.Sprintf(`{ node(id: %q) { ... on Job { executions { id user { email } } } } }`, id)
		if n, base := count(withUsers, "users"), count(xs, "users"); n-base != 1 {
			t.Errorf("4 executions' users: %d queries of users, want 1", n-base)
		}
		r = e.gql(a.memberToken, withUsers, nil)
		r.ok(t)
		if got := strings.Count(string(r.Data), `"email"`); got != 4 {
			t.Errorf("%d users, want 4: %s", got, r.Data)
		}
	})
}

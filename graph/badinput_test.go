package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

const submitJob = `mutation($s: JobSpecInput!) { submitJob(spec: $s) { id status } }`

// service is a valid service spec; edit a copy to make it invalid.
func service(name string) map[string]any {
	return map[string]any{"name": name, "image": "busybox", "command": []string{"true"}, "cpu": 1, "memoryMiB": 256}
}

// spec is a valid job spec on queue; edit it to make it invalid.
func spec(queue string, services ...map[string]any) map[string]any {
	if len(services) == 0 {
		services = []map[string]any{service("main")}
	}
	return map[string]any{"name": "test", "queue": queue, "services": services}
}

// with returns a copy of m with the given keys set.
func with(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// counts are the number of rows of every table a refused request could
// have written to.
type counts map[string]int

func (e *env) counts(t *testing.T) counts {
	t.Helper()
	ctx := viewer.SystemContext(context.Background())
	c := counts{}
	var err error
	if c["jobs"], err = e.db.Ent.Job.Query().Count(ctx); err != nil {
		t.Fatal(err)
	}
	if c["services"], err = e.db.Ent.Service.Query().Count(ctx); err != nil {
		t.Fatal(err)
	}
	if c["charges"], err = e.db.Ent.Charge.Query().Count(ctx); err != nil {
		t.Fatal(err)
	}
	if c["api_tokens"], err = e.db.Ent.APIToken.Query().Count(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM river_job").Scan(&n); err != nil {
		t.Fatal(err)
	}
	c["river_job"] = n
	return c
}

func (c counts) equal(d counts) bool {
	for k, v := range c {
		if d[k] != v {
			return false
		}
	}
	return len(c) == len(d)
}

// id returns the "id" under the one root field of r.
func (r response) id(t testing.TB) string {
	t.Helper()
	r.ok(t)
	var out map[string]struct{ ID string }
	r.decode(t, &out)
	for _, v := range out {
		if v.ID == "" {
			t.Fatalf("no id in %s", r.Data)
		}
		return v.ID
	}
	t.Fatalf("no root field in %s", r.Data)
	return ""
}

// nested returns a selection of Job fields nested at least levels deep:
// owner { jobs { edges { node { owner { … id } } } } }.
func nested(levels int) string {
	var b strings.Builder
	n := 0
	for n < levels {
		b.WriteString("owner { jobs { edges { node { ")
		n += 4
	}
	b.WriteString("id")
	b.WriteString(strings.Repeat(" } } } }", n/4))
	return b.String()
}

// badFixture is a tenant with one queue, storage, bucket and project for
// every way of getting a submission wrong.
type badFixture struct {
	e                 *env
	a                 *tenant
	strict            *tenant // requires a project
	expired, revoked  string  // token secrets
	everyone, private string  // group IDs
}

func newBadFixture(t *testing.T, url string) *badFixture {
	t.Helper()
	e := newEnv(t, url)
	f := &badFixture{e: e, a: e.newTenant("acme"), strict: e.newTenant("strict")}
	sys := viewer.SystemContext(context.Background())
	var err error
	f.everyone, err = e.db.Ent.Group.Query().
		Where(group.TenantID(f.a.ent.ID), group.Name("everyone")).OnlyID(sys)
	if err != nil {
		t.Fatal(err)
	}
	admin := func(q string, v vars) string {
		t.Helper()
		return e.gql(f.a.adminToken, q, v).id(t)
	}
	f.private = admin(`mutation { createGroup(input: {name: "private"}) { id } }`, nil)
	createQueue := `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`
	admin(createQueue, vars{"in": vars{"name": "private-q", "groupIDs": []string{f.private}}})
	admin(createQueue, vars{"in": vars{
		"name": "limits", "maxGpusPerJob": 1, "maxCPUPerJob": 2, "maxMemoryMibPerJob": 1024,
		"gpuPrices": []vars{{"type": "H100", "perMinute": 1}}, "groupIDs": []string{f.everyone},
	}})
	admin(createQueue, vars{"in": vars{"name": "batch", "mode": "BATCH", "groupIDs": []string{f.everyone}}})
	admin(createQueue, vars{"in": vars{"name": "paid", "startFee": 10, "cpuPrice": 1, "groupIDs": []string{f.everyone}}})
	farStore := admin(`mutation($in: CreateStorageInput!) { createStorage(input: $in) { id } }`, vars{"in": vars{
		"name": "far", "kind": "S3", "endpoint": "https://s3.example.test", "s3Bucket": "lv9",
	}})
	admin(`mutation($in: CreateBucketInput!) { createBucket(input: $in) { id } }`, vars{"in": vars{
		"name": "far-data", "storageID": farStore, "readGroupIDs": []string{f.everyone}, "writeGroupIDs": []string{f.everyone},
	}})
	admin(`mutation { createProject(input: {name: "secret-prj"}) { id } }`, nil)

	r := e.gql(f.strict.adminToken, `mutation { updateTenant(input: {requireProject: true}) { requireProject } }`, nil)
	r.ok(t)
	if !strings.Contains(string(r.Data), `"requireProject":true`) {
		t.Fatalf("updateTenant: %s", r.Data)
	}

	// An expired token of the member, as the database would hold it.
	secret, hash := auth.NewSecret()
	_, err = e.db.Ent.APIToken.Create().
		SetName("old").SetKind(apitoken.KindAPI).SetTokenHash(hash).SetHint(auth.Hint(secret)).
		SetUserID(f.a.member.ID).SetTenantID(f.a.ent.ID).SetEnvironmentID(f.a.mainEnv).
		SetExpiresAt(time.Now().Add(-time.Minute)).
		Save(sys)
	if err != nil {
		t.Fatal(err)
	}
	f.expired = secret

	// A token of the member, revoked through the API.
	r = e.gql(f.a.memberToken, `mutation { createAPIToken(name: "doomed") { token apiToken { id } } }`, nil)
	r.ok(t)
	var created struct {
		CreateAPIToken struct {
			Token    string
			APIToken struct{ ID string }
		}
	}
	r.decode(t, &created)
	e.gql(f.a.memberToken, `mutation($id: ID!) { revokeAPIToken(id: $id) { id } }`, vars{"id": created.CreateAPIToken.APIToken.ID}).ok(t)
	f.revoked = created.CreateAPIToken.Token
	return f
}

func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		f := newBadFixture(t, url)
		e, a := f.e, f.a

		bigBody, _ := json.Marshal(map[string]any{
			"query":     submitJob,
			"variables": vars{"s": spec("default"), "pad": strings.Repeat("x", 10<<20)},
		})
		submit := func(s map[string]any) []byte {
			b, _ := json.Marshal(map[string]any{"query": submitJob, "variables": vars{"s": s}})
			return b
		}
		gqlBody := func(q string) []byte {
			b, _ := json.Marshal(map[string]any{"query": q})
			return b
		}
		tooDeep := nested(50)

		for _, tc := range []struct {
			name       string
			token      string // a.memberToken unless set
			header     string // a raw Authorization header instead of token
			body       []byte
			chunked    bool // send body without a Content-Length
			wantStatus int  // 200 unless set
			wantCode   string
			wantField  string
			wantMsg    []string
		}{
			{
				name: "unknown queue", body: submit(spec("nope")),
				wantCode: "NOT_FOUND", wantField: "queue", wantMsg: []string{`queue "nope" not found`},
			},
			{
				name: "queue of another group", body: submit(spec("private-q")),
				wantCode: "FORBIDDEN", wantField: "queue", wantMsg: []string{"may use queue private-q"},
			},
			{
				name: "too many GPUs", body: submit(spec("limits", with(service("main"), "gpus", 2, "gpuTypes", []string{"H100"}))),
				wantCode: "BAD_USER_INPUT", wantField: "services", wantMsg: []string{"2 GPUs", "allows 1"},
			},
			{
				name: "too many CPUs", body: submit(spec("limits", with(service("main"), "cpu", 3))),
				wantCode: "BAD_USER_INPUT", wantField: "services", wantMsg: []string{"3 CPUs", "allows 2"},
			},
			{
				name: "too many CPUs over all services", body: submit(spec("limits",
					with(service("a"), "cpu", 1.5), with(service("b"), "cpu", 1.5))),
				wantCode: "BAD_USER_INPUT", wantField: "services", wantMsg: []string{"3 CPUs", "allows 2"},
			},
			{
				name: "too much memory", body: submit(spec("limits", with(service("main"), "memoryMiB", 2048))),
				wantCode: "BAD_USER_INPUT", wantField: "services", wantMsg: []string{"2048 MiB", "allows 1024"},
			},
			{
				name: "GPU type the queue lacks", body: submit(spec("limits", with(service("main"), "gpus", 1, "gpuTypes", []string{"A100"}))),
				wantCode: "BAD_USER_INPUT", wantField: "services[0].gpuTypes", wantMsg: []string{`"A100"`},
			},
			{
				name: "negative CPU", body: submit(spec("limits", with(service("main"), "cpu", -1))),
				wantCode: "BAD_USER_INPUT", wantField: "services[0].cpu", wantMsg: []string{"between 0 and"},
			},
			{
				name: "negative memory", body: submit(spec("limits", with(service("main"), "memoryMiB", -1))),
				wantCode: "BAD_USER_INPUT", wantField: "services[0].memoryMiB", wantMsg: []string{"between 0 and"},
			},
			{
				name: "negative GPUs", body: submit(spec("limits", with(service("main"), "gpus", -1, "gpuTypes", []string{"H100"}))),
				wantCode: "BAD_USER_INPUT", wantField: "services[0].gpus", wantMsg: []string{"between 0 and"},
			},
			{
				name: "interactive job on a batch queue", body: submit(with(spec("batch"), "interactive", true)),
				wantCode: "BAD_USER_INPUT", wantField: "interactive", wantMsg: []string{"batch jobs only"},
			},
			{
				name:     "bucket on a storage the queue cannot reach",
				body:     submit(with(spec("default"), "mounts", []vars{{"bucket": "far-data", "path": "/data"}})),
				wantCode: "BAD_USER_INPUT", wantField: "mounts[0].bucket", wantMsg: []string{"far-data", "cannot reach"},
			},
			{
				name: "no project where the tenant requires one", token: f.strict.memberToken, body: submit(spec("default")),
				wantCode: "BAD_USER_INPUT", wantField: "project", wantMsg: []string{"requires every job to name a project"},
			},
			{
				name: "project the user is not a member of", body: submit(with(spec("default"), "project", "secret-prj")),
				wantCode: "FORBIDDEN", wantField: "project", wantMsg: []string{"not a member of project secret-prj"},
			},
			{
				name: "empty service name", body: submit(spec("default", service(""))),
				wantCode: "BAD_USER_INPUT", wantField: "services[0].name", wantMsg: []string{"is required"},
			},
			{
				name: "duplicate service name", body: submit(spec("default", service("web"), service("web"))),
				wantCode: "BAD_USER_INPUT", wantField: "services[1].name", wantMsg: []string{`duplicate service name "web"`},
			},
			{
				name: "10 MB body", body: bigBody,
				wantStatus: http.StatusRequestEntityTooLarge, wantCode: "BAD_USER_INPUT", wantMsg: []string{"larger than 8 MiB"},
			},
			{
				name: "10 MB body without Content-Length", body: bigBody, chunked: true,
				wantStatus: http.StatusRequestEntityTooLarge, wantCode: "BAD_USER_INPUT", wantMsg: []string{"larger than 8 MiB"},
			},
			{
				name: "query nested 50 deep", body: gqlBody(`{ viewer { user { jobs { edges { node { ` + tooDeep + ` } } } } } }`),
				wantCode: "BAD_USER_INPUT", wantMsg: []string{"nested more than 15 levels"},
			},
			{
				name: "mutation nested 50 deep", body: gqlBody(`mutation { submitJob(spec: {queue: "default", services: [{name: "main", image: "busybox"}]}) { ` + tooDeep + ` } }`),
				wantCode: "BAD_USER_INPUT", wantMsg: []string{"nested more than 15 levels"},
			},
			{
				name: "malformed token", token: "lv9_not-a-token", body: submit(spec("default")),
				wantStatus: http.StatusUnauthorized, wantCode: "UNAUTHENTICATED", wantMsg: []string{"invalid, expired or revoked token"},
			},
			{
				name: "not a bearer token", header: "Basic " + a.memberToken, body: submit(spec("default")),
				wantStatus: http.StatusUnauthorized, wantCode: "UNAUTHENTICATED", wantMsg: []string{"Bearer TOKEN"},
			},
			{
				name: "expired token", token: f.expired, body: submit(spec("default")),
				wantStatus: http.StatusUnauthorized, wantCode: "UNAUTHENTICATED", wantMsg: []string{"invalid, expired or revoked token"},
			},
			{
				name: "revoked token", token: f.revoked, body: submit(spec("default")),
				wantStatus: http.StatusUnauthorized, wantCode: "UNAUTHENTICATED", wantMsg: []string{"invalid, expired or revoked token"},
			},
			{
				name: "no token", header: "-", body: submit(spec("default")),
				wantCode: "UNAUTHENTICATED", wantMsg: []string{"sign in first"},
			},
			{
				name: "too few tokens", body: submit(spec("paid")),
				wantCode: "INSUFFICIENT_TOKENS", wantMsg: []string{"has 0 tokens", "needs 11"},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := e.counts(t)
				auth := "Bearer " + a.memberToken
				switch {
				case tc.header == "-":
					auth = ""
				case tc.header != "":
					auth = tc.header
				case tc.token != "":
					auth = "Bearer " + tc.token
				}
				r := e.postRaw(t, auth, tc.body, tc.chunked)
				want := tc.wantStatus
				if want == 0 {
					want = http.StatusOK
				}
				if r.Status != want {
					t.Errorf("status = %d, want %d", r.Status, want)
				}
				if len(r.Errors) == 0 {
					t.Fatalf("no error; data = %s", r.Data)
				}
				if got := r.code(); got != tc.wantCode {
					t.Errorf("code = %q, want %q (%+v)", got, tc.wantCode, r.Errors)
				}
				if got, _ := r.Errors[0].Extensions["field"].(string); got != tc.wantField {
					t.Errorf("field = %q, want %q (%+v)", got, tc.wantField, r.Errors)
				}
				for _, m := range tc.wantMsg {
					if !strings.Contains(r.Errors[0].Message, m) {
						t.Errorf("message %q does not say %q", r.Errors[0].Message, m)
					}
				}
				if d := strings.TrimSpace(string(r.Data)); d != "" && d != "null" {
					t.Errorf("data = %s, want none", d)
				}
				if tc.wantCode == "INSUFFICIENT_TOKENS" {
					ext := r.Errors[0].Extensions
					if ext["balance"] != "0" || ext["required"] != "11" {
						t.Errorf("extensions = %v, want balance 0 and required 11", ext)
					}
				}
				if after := e.counts(t); !after.equal(before) {
					t.Errorf("rows before %v, after %v", before, after)
				}
			})
		}

		// The same submissions do go through once the payer can pay: the
		// cases above fail for the reason they name.
		t.Run("accepted once affordable", func(t *testing.T) {
			before := e.counts(t)
			e.gql(a.memberToken, submitJob, vars{"s": spec("default")}).ok(t)
			e.gql(a.adminToken, `mutation($in: GrantTokensInput!) { grantTokens(input: $in) { id } }`,
				vars{"in": vars{"userID": a.member.ID, "tokens": 100, "reason": "test"}}).ok(t)
			r := e.gql(a.memberToken, submitJob, vars{"s": spec("paid")})
			r.ok(t)
			var out struct{ SubmitJob struct{ ID, Status string } }
			r.decode(t, &out)
			if out.SubmitJob.Status != "PENDING" {
				t.Fatalf("submitJob = %s", r.Data)
			}
			after := e.counts(t)
			want := counts{"jobs": before["jobs"] + 2, "services": before["services"] + 2,
				"charges": before["charges"] + 1, "api_tokens": before["api_tokens"], "river_job": before["river_job"] + 2}
			if !after.equal(want) {
				t.Fatalf("rows after two submissions and a grant: %v, want %v", after, want)
			}
		})
	})
}

func TestEstimateJobCost(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		f := newBadFixture(t, url)
		s := spec("paid", with(service("main"), "cpu", 1.5, "memoryMiB", 512))
		before := f.e.counts(t)
		r := f.e.gql(f.a.memberToken, `query($s: JobSpecInput!, $m: Int!) {
			estimateJobCost(spec: $s, minutes: $m) { startFee perMinute minutes total } }`, vars{"s": s, "m": 7})
		r.ok(t)
		var out struct {
			EstimateJobCost struct {
				StartFee, PerMinute, Total json.Number
				Minutes                    int
			}
		}
		r.decode(t, &out)
		got := out.EstimateJobCost
		// startFee 10 + (1.5 CPUs × 1 token) × 7 minutes; memory is free.
		if got.StartFee != "10" || got.PerMinute != "1.5" || got.Minutes != 7 || got.Total != "20.5" {
			t.Fatalf("estimate = %s, want startFee 10, perMinute 1.5, minutes 7, total 20.5", r.Data)
		}
		fee, _ := billing.ParseTokens(got.StartFee.String())
		pm, _ := billing.ParseTokens(got.PerMinute.String())
		total, _ := billing.ParseTokens(got.Total.String())
		if total != fee+pm*7 {
			t.Fatalf("total %s != startFee %s + perMinute %s × 7", total, fee, pm)
		}
		// The default of 60 minutes.
		r = f.e.gql(f.a.memberToken, `query($s: JobSpecInput!) { estimateJobCost(spec: $s) { minutes total } }`, vars{"s": s})
		r.ok(t)
		if !strings.Contains(string(r.Data), `"minutes":60,"total":100`) {
			t.Fatalf("60-minute estimate = %s, want total 10 + 1.5 × 60 = 100", r.Data)
		}
		// An estimate makes the same checks as a submission.
		r = f.e.gql(f.a.memberToken, `query($s: JobSpecInput!) { estimateJobCost(spec: $s) { total } }`,
			vars{"s": spec("limits", with(service("main"), "cpu", 3))})
		if r.code() != "BAD_USER_INPUT" {
			t.Fatalf("estimate over the queue's limits: %+v", r.Errors)
		}
		r = f.e.gql(f.a.memberToken, `query($s: JobSpecInput!) { estimateJobCost(spec: $s, minutes: -1) { total } }`, vars{"s": s})
		if r.code() != "BAD_USER_INPUT" {
			t.Fatalf("negative minutes: %+v", r.Errors)
		}
		if after := f.e.counts(t); !after.equal(before) {
			t.Fatalf("an estimate wrote rows: before %v, after %v", before, after)
		}
	})
}

// postRaw sends body with a raw Authorization header (none when empty),
// chunked (with no Content-Length) when asked.
func (e *env) postRaw(t testing.TB, authorization string, body []byte, chunked bool) response {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // hides the length from the client
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL, rd)
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return do(t, http.DefaultClient, req)
}

func do(t testing.TB, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("status %d, body %q: %v", resp.StatusCode, raw, err)
	}
	r.Status = resp.StatusCode
	return r
}

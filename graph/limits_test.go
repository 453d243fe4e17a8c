package graph_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// TestBadNumbersAreBadInput: numbers no amount, price or limit can be
// (NaN, infinities, out of range, finer than a micro-token) and cursors that
// were never issued are the caller's mistake, named at their field, and
// store nothing.
func TestBadNumbersAreBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("nums")
		e.gql(a.adminToken, `mutation { createQueue(input: {name: "q1"}) { id } }`, nil).ok(t)
		var qs struct {
			Queues struct {
				Edges []struct{ Node struct{ ID string } }
			}
		}
		e.gql(a.adminToken, `{ queues(where: {name: "q1"}) { edges { node { id } } } }`, nil).decode(t, &qs)
		qID := qs.Queues.Edges[0].Node.ID

		grant := `mutation($t: Tokens!, $u: ID) { grantTokens(input: {userID: $u, tokens: $t, reason: "x"}) { id } }`
		createQ := `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`
		updateQ := `mutation($id: ID!, $in: UpdateQueueInput!) { updateQueue(id: $id, input: $in) { id } }`
		type tc struct {
			name      string
			query     string
			vars      vars
			wantField string
			wantCode  string // "" is BAD_USER_INPUT
		}
		var cases []tc
		for _, bad := range []any{"NaN", "Infinity", "-Infinity", "inf", 1e30, "1e30", 1e-7, "1e-7", "0.0000001", "1e400", 1e308} {
			cases = append(cases,
				tc{"grant " + str(bad), grant, vars{"t": bad, "u": a.member.ID}, "tokens", ""},
				tc{"cpu price " + str(bad), createQ, vars{"in": vars{"name": "p", "cpuPrice": bad}}, "cpuPrice", ""},
				tc{"GPU price " + str(bad), createQ, vars{"in": vars{"name": "p", "gpuPrices": []vars{{"type": "A10", "perMinute": bad}}}}, "gpuPrices[0].perMinute", ""},
				tc{"update start fee " + str(bad), updateQ, vars{"id": qID, "in": vars{"startFee": bad}}, "startFee", ""},
			)
		}
		for _, bad := range []any{"NaN", "Infinity", "-Infinity", 1e30, -1, 0} {
			cases = append(cases,
				tc{"create maxCPUPerJob " + str(bad), createQ, vars{"in": vars{"name": "p", "maxCPUPerJob": bad}}, "maxCPUPerJob", ""},
				tc{"update maxCPUPerJob " + str(bad), updateQ, vars{"id": qID, "in": vars{"maxCPUPerJob": bad}}, "maxCPUPerJob", ""},
				tc{"create defaultCPU " + str(bad), createQ, vars{"in": vars{"name": "p", "defaultCPU": bad}}, "defaultCPU", ""},
				tc{"update multiplier " + str(bad), updateQ, vars{"id": qID, "in": vars{"multiplier": bad}}, "prices", ""},
			)
		}
		// Strings that are no float at all are refused by GraphQL itself.
		cases = append(cases,
			tc{`maxCPUPerJob "1e400"`, createQ, vars{"in": vars{"name": "p", "maxCPUPerJob": "1e400"}}, "", "GRAPHQL_VALIDATION_FAILED"},
			tc{"literal 1e400 maxCPUPerJob", `mutation { createQueue(input: {name: "p", maxCPUPerJob: 1e400}) { id } }`, nil, "", "GRAPHQL_VALIDATION_FAILED"},
		)
		cases = append(cases,
			tc{"literal NaN tokens", `mutation($u: ID) { grantTokens(input: {userID: $u, tokens: "NaN", reason: "x"}) { id } }`, vars{"u": a.member.ID}, "tokens", ""},
			tc{"literal 1e30 tokens", `mutation($u: ID) { grantTokens(input: {userID: $u, tokens: 1e30, reason: "x"}) { id } }`, vars{"u": a.member.ID}, "tokens", ""},
			tc{"literal 1e-7 GPU price", `mutation { createQueue(input: {name: "p", gpuPrices: [{type: "A", perMinute: 1e-7}]}) { id } }`, nil, "gpuPrices[0].perMinute", ""},
			tc{"garbage after", `query($a: Cursor) { jobs(first: 2, after: $a) { edges { node { id } } } }`, vars{"a": "garbage!"}, "after", ""},
			tc{"garbage before", `query($b: Cursor) { queues(last: 2, before: $b) { edges { node { id } } } }`, vars{"b": "Z2FyYmFnZQ=="}, "before", ""},
			tc{"cursor of another type", `query($a: Cursor) { jobs(first: 2, after: $a) { edges { node { id } } } }`, vars{"a": 12}, "after", ""},
			tc{"literal garbage after", `{ users(first: 2, after: "%%%") { edges { node { id } } } }`, nil, "after", ""},
			tc{"garbage cursor nested", `{ viewer { user { jobs(first: 1, after: "nope") { edges { node { id } } } } } }`, nil, "after", ""},
		)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := e.counts(t)
				queues := e.queueCount(t)
				r := e.gql(a.adminToken, c.query, c.vars)
				want := cmp.Or(c.wantCode, "BAD_USER_INPUT")
				if r.code() != want {
					t.Fatalf("got %+v (data %s), want %s", r.Errors, r.Data, want)
				}
				if f, _ := r.Errors[0].Extensions["field"].(string); f != c.wantField {
					t.Errorf("field %q, want %q (%+v)", f, c.wantField, r.Errors[0])
				}
				if !before.equal(e.counts(t)) || queues != e.queueCount(t) {
					t.Errorf("a refused request wrote rows")
				}
			})
		}
		// Nothing bad was stored: every queue still reads.
		r := e.gql(a.memberToken, `{ queues { edges { node { name maxCPUPerJob multiplier cpuPrice } } } }`, nil)
		r.ok(t)
	})
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return `"` + v + `"`
	default:
		return fmt.Sprint(v)
	}
}

func (e *env) queueCount(t *testing.T) int {
	t.Helper()
	n, err := e.db.Ent.Queue.Query().Count(viewer.SystemContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The largest queries the CLI and the SDK send (cmd/levers9, sdk/python):
// each must stay within the cost limit at its largest page.
var clientQueries = map[string]struct {
	query string
	vars  vars
}{
	"levers9 jobs": {`query($n: Int!, $a: Cursor, $w: JobWhereInput) {
  jobs(first: $n, after: $a, where: $w, orderBy: {field: CREATED_AT, direction: DESC}) {
    edges { node { id name status statusReason createdAt startedAt finishedAt queue { name } project { name } owner { email }
  estimatePerMinute services { name status statusReason command cpu memoryMib gpus gpuType exitCode node { name } } } } pageInfo { hasNextPage endCursor } } }`,
		vars{"n": 500, "w": vars{}}},
	"levers9 queues": {`{ queues(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node {
  id name mode maxGpusPerJob maxCPUPerJob maxMemoryMibPerJob startFee cpuPrice memoryPrice
  gpuPrices { type perMinute } multiplier nodes { name status } } } } }`, nil},
	"levers9 nodes": {`{ nodes(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node {
  id name status lastHeartbeatAt agentVersion inventory { cpus memoryMiB gpus { type count devices } runtime }
  booked { cpu memoryMiB gpus { type count devices } } free { cpu memoryMiB gpus { type count devices } }
  queues { name } } } } }`, nil},
	"levers9 tokens": {`query($n: Int!) {
  viewer { user { email } balance }
  projects(first: 100, orderBy: {field: NAME, direction: ASC}) { edges { node { name balance } } }
  charges(first: $n, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node {
    createdAt kind tokens payerKind reason job { id name } project { name }
  } } }
}`, vars{"n": 1000}},
	"levers9 logs": {`query($j: ID!, $a: Int, $f: Int!, $n: Int!) { jobLogs(jobId: $j, attempt: $a, fromSeq: $f, first: $n) { attempt seq service stream text } }`,
		vars{"j": "job_none", "f": 1, "n": 1000}},
	"SDK jobs": {`query($n: Int!, $a: Cursor, $w: JobWhereInput, $o: JobOrder) { jobs(first: $n, after: $a, where: $w, orderBy: $o) { edges { node { id name status statusReason createdAt startedAt finishedAt queue { name } services { name status statusReason exitCode } } } pageInfo { hasNextPage endCursor } } }`,
		vars{"n": 1000, "o": vars{"field": "CREATED_AT", "direction": "DESC"}}},
	"SDK queue": {`query($n: String!) { queues(where: {name: $n}) { edges { node { id } } } }`, vars{"n": "default"}},
}

// TestCostLimit: an operation costs every row its lists may return, and one
// costing more than the limit is refused before any resolver runs (#12.1).
func TestCostLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("cost")

		for name, q := range clientQueries {
			t.Run(name, func(t *testing.T) {
				r := e.gql(a.memberToken, q.query, q.vars)
				if r.code() != "" && r.code() != "NOT_FOUND" {
					t.Fatalf("%s refused: %+v", name, r.Errors)
				}
			})
		}

		var aliases strings.Builder
		aliases.WriteString("{")
		for i := range 1000 {
			fmt.Fprintf(&aliases, " a%d: jobs(first: 1000) { edges { node { id } } }", i)
		}
		aliases.WriteString(" }")
		deep := `mutation($s: JobSpecInput!) { submitJob(spec: $s) { owner {
  jobs(first: 200) { edges { node { owner { jobs(first: 1000) { edges { node { id } } } } } } } } } }`
		for _, tc := range []struct {
			name, query string
			vars        vars
		}{
			{"1,000 aliases of a 1,000-row page", aliases.String(), nil},
			{"a page of pages", `{ jobs(first: 200) { edges { node { owner { jobs(first: 1000) { edges { node { id } } } } } } } }`, nil},
			{"a page of pages by variables", `query($n: Int, $m: Int) { jobs(first: $n) { edges { node { owner { jobs(last: $m) { edges { node { id } } } } } } } }`, vars{"n": 200, "m": 1000}},
			{"pages without first", `{ users { edges { node { jobs { edges { node { owner { email } } } } } } } }`, nil},
			{"unpaged lists of lists", `{ queues(first: 1000) { edges { node { nodes { queues { nodes { queues { name } } } } } } } }`, nil},
			{"in fragments", `{ ...F } fragment F on Query { jobs(first: 200) { edges { node { ...G } } } } fragment G on Job { owner { jobs(first: 1000) { totalCount } } }`, nil},
			{"a mutation with a page of pages", deep, vars{"s": spec("default")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := e.counts(t)
				r := e.gql(a.memberToken, tc.query, tc.vars)
				if r.code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "more than the limit of 100000") {
					t.Fatalf("got %+v, want the cost limit", r.Errors)
				}
				if string(r.Data) != "" && string(r.Data) != "null" {
					t.Errorf("data %s: resolvers ran", r.Data)
				}
				if !before.equal(e.counts(t)) {
					t.Error("a refused mutation wrote rows")
				}
			})
		}

		// The page size is bounded, and a connection without first or last
		// gets a page of at most MaxPageSize rows, as its cost assumed.
		r := e.gql(a.memberToken, `{ jobs(first: 1001) { totalCount } }`, nil)
		if r.code() != "BAD_USER_INPUT" || r.Errors[0].Extensions["field"] != "first" {
			t.Fatalf("first: 1001: %+v", r.Errors)
		}
		users := make([]*ent.UserCreate, graph.MaxPageSize+5)
		for i := range users {
			users[i] = e.db.Ent.User.Create().SetTenantID(a.ent.ID).SetEmail(fmt.Sprintf("u%d@cost.test", i))
		}
		if err := e.db.Ent.User.CreateBulk(users...).Exec(viewer.SystemContext(context.Background())); err != nil {
			t.Fatal(err)
		}
		var out struct {
			Users struct {
				TotalCount int
				Edges      []struct{ Node struct{ ID string } }
				PageInfo   struct{ HasNextPage bool }
			}
		}
		r = e.gql(a.adminToken, `{ users { totalCount edges { node { id } } pageInfo { hasNextPage } } }`, nil)
		r.ok(t)
		r.decode(t, &out)
		if len(out.Users.Edges) != graph.MaxPageSize || !out.Users.PageInfo.HasNextPage || out.Users.TotalCount != graph.MaxPageSize+7 {
			t.Fatalf("users without first: %d rows of %d, hasNextPage %v", len(out.Users.Edges), out.Users.TotalCount, out.Users.PageInfo.HasNextPage)
		}
	})
}

// TestResponseCap: an answer larger than the limit is replaced by one
// error, never cut short (#12.1).
func TestResponseCap(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, func(r *graph.Resolver) { r.Limits.ResponseBytes = 4096 })
		a := e.newTenant("cap")
		e.gql(a.memberToken, `{ viewer { user { email } } }`, nil).ok(t)

		var q strings.Builder
		q.WriteString("{")
		for i := range 200 {
			fmt.Fprintf(&q, " v%d: viewer { user { email } }", i)
		}
		q.WriteString(" }")
		long := strings.Repeat("x", 1000)
		for i := range 5 {
			e.gql(a.adminToken, `mutation($n: String!, $d: String) { createQueue(input: {name: $n, description: $d}) { id } }`,
				vars{"n": fmt.Sprintf("long%d", i), "d": long}).ok(t)
		}
		for name, query := range map[string]string{
			"many small fields": q.String(),
			// Few fields, long texts: the budget counts their length.
			"long texts": `{ queues(first: 10, where: {nameHasPrefix: "long"}) { edges { node { description } } } }`,
		} {
			t.Run(name, func(t *testing.T) {
				r := e.gql(a.adminToken, query, nil)
				if r.code() != "BAD_USER_INPUT" || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Message, "larger than 4096 bytes") {
					t.Fatalf("got %d errors %+v", len(r.Errors), r.Errors)
				}
				if string(r.Data) != "" && string(r.Data) != "null" {
					t.Fatalf("data %s", r.Data)
				}
			})
		}
		// Under the limit, the same query answers.
		e.gql(a.adminToken, `{ queues(first: 2, where: {nameHasPrefix: "long"}) { edges { node { description } } } }`, nil).ok(t)
	})
}

// TestAnonymousSeesNoSchema: without credentials there is no introspection
// and validation errors suggest no names; signed in, both work (#12.9).
func TestAnonymousSeesNoSchema(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("intro")
		for _, tc := range []struct {
			name, query string
			suggests    string // what a signed-in caller is told
		}{
			{"misspelt field", `{ jbos { totalCount } }`, `Did you mean "jobs"?`},
			{"misspelt argument", `mutation { signIn(emial: "a@b.c", password: "x") { token } }`, `Did you mean "email"?`},
			{"misspelt enum value", `{ jobs(orderBy: {field: CREATED_ATT}) { totalCount } }`, `Did you mean the enum value "CREATED_AT"?`},
			{"misspelt type", `query($w: JobWhereInptu) { jobs(where: $w) { totalCount } }`, ``},
			{"misspelt fragment type", `{ ...F } fragment F on Qeury { __typename }`, ``},
			{"misspelt input field", `{ jobs(where: {nmae: "x"}) { totalCount } }`, `Did you mean "name"?`},
			{"field of a scalar", `{ viewer { user { email { x } } } }`, ``},
		} {
			t.Run(tc.name, func(t *testing.T) {
				anon := e.gql("", tc.query, nil)
				if len(anon.Errors) == 0 {
					t.Fatalf("anonymous: no error, data %s", anon.Data)
				}
				for _, er := range anon.Errors {
					if strings.Contains(er.Message, "Did you mean") {
						t.Errorf("anonymous caller told %q", er.Message)
					}
				}
				if tc.suggests == "" {
					return
				}
				signed := e.gql(a.memberToken, tc.query, nil)
				if len(signed.Errors) == 0 || !strings.Contains(signed.Errors[0].Message, tc.suggests) {
					t.Errorf("signed in: %+v, want %q", signed.Errors, tc.suggests)
				}
			})
		}
		for _, q := range []string{
			`{ __schema { types { name } } }`,
			`{ __schema { queryType { name } } }`,
			`{ __type(name: "Job") { fields { name } } }`,
			`query { a: __typename __type(name: "Query") { name } }`,
		} {
			anon := e.gql("", q, nil)
			if anon.code() != "UNAUTHENTICATED" || strings.Contains(string(anon.Data), "Job") || strings.Contains(string(anon.Data), `"types"`) {
				t.Errorf("anonymous %s: data %s, errors %+v", q, anon.Data, anon.Errors)
			}
			e.gql(a.memberToken, q, nil).ok(t)
		}
		e.gql("", `{ __typename }`, nil).ok(t)
	})
}

package graph_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
)

// fuzzResponseBytes is the answer limit the fuzzed server runs with: small,
// so that the fuzzer reaches it.
const fuzzResponseBytes = 64 << 10

// FuzzGraphQLLimits sends any query and variables, anonymously or as a
// member or admin, to the real handler on a real database, and checks what
// must hold for every input: no 5xx, no panic, no INTERNAL error, an answer
// that is JSON and within the size limit, and no schema names for anonymous
// callers (#12.1, #12.9, #12.15).
func FuzzGraphQLLimits(f *testing.F) {
	e := newEnv(f, dbtest.URL(f, "sqlite"), func(r *graph.Resolver) { r.Limits.ResponseBytes = fuzzResponseBytes })
	a := e.newTenant("fuzz")
	tokens := []string{"", a.memberToken, a.adminToken}

	var aliases strings.Builder
	aliases.WriteString("{")
	for i := range 300 {
		aliases.WriteString(" a" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) + ": jobs(first: 1000) { edges { node { id } } }")
	}
	aliases.WriteString(" }")
	seeds := []struct {
		query, vars string
	}{
		{aliases.String(), `{}`},
		{`{ jobs(first: 200) { edges { node { owner { jobs(first: 1000) { edges { node { id } } } } } } } }`, `{}`},
		{`query($n: Int) { jobs(first: $n) { totalCount edges { cursor node { id name } } pageInfo { endCursor } } }`, `{"n": 3}`},
		{`query($a: Cursor) { jobs(first: 2, after: $a) { edges { node { id } } } }`, `{"a": "garbage"}`},
		{`query($a: Cursor) { queues(last: 2, before: $a) { edges { node { id } } } }`, `{"a": 1e400}`},
		{`mutation($t: Tokens!) { grantTokens(input: {tokens: $t, reason: "x"}) { id } }`, `{"t": "NaN"}`},
		{`mutation($t: Tokens!) { grantTokens(input: {tokens: $t, reason: "x"}) { id } }`, `{"t": 1e30}`},
		{`mutation($in: CreateQueueInput!) { createQueue(input: $in) { id maxCPUPerJob } }`, `{"in": {"name": "q", "maxCPUPerJob": "Infinity", "cpuPrice": 1e-7}}`},
		{`mutation($in: UpdateQueueInput!) { updateQueue(id: "que_x", input: $in) { id } }`, `{"in": {"multiplier": "NaN"}}`},
		{`{ queues { edges { node { name maxCPUPerJob multiplier cpuPrice gpuPrices { perMinute } nodes { name } } } } }`, `{}`},
		{`{ __schema { types { name fields { name } } } }`, `{}`},
		{`{ __type(name: "Job") { fields { name } } }`, `{}`},
		{`{ jbos { id } }`, `{}`},
		{`mutation { signIn(emial: "a", password: "b") { token } }`, `{}`},
		{`{ viewer { user { email jobs(last: 1001) { totalCount } } } }`, `{}`},
		{`query($j: ID!) { jobLogs(jobId: $j, first: 1000) { text } }`, `{"j": "job_x"}`},
		{`{ estimateJobCost(spec: {queue: "default", services: [{name: "m", image: "x", cpu: 1e308}]}, minutes: 2147483647) { total } }`, `{}`},
		{`{ ...F } fragment F on Query { ...F }`, `{}`},
		{`{ a: viewer { user { email } } b: viewer { user { email } } }`, `null`},
	}
	for _, s := range seeds {
		for who := range tokens {
			f.Add(s.query, s.vars, uint8(who))
		}
	}

	f.Fuzz(func(t *testing.T, query, variables string, who uint8) {
		body := map[string]any{"query": query}
		if json.Valid([]byte(variables)) {
			body["variables"] = json.RawMessage(variables)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Skip() // not UTF-8: no client can send it as JSON
		}
		token := tokens[int(who)%len(tokens)]
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The timeout only tells a hung request from a slow one.
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%q %s as %d: %v", query, variables, who, err)
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d: %s", resp.StatusCode, answer)
		}
		// One error of slack over the limit: the one that replaces an
		// answer over it.
		if len(answer) > fuzzResponseBytes+1024 {
			t.Fatalf("answer of %d bytes, limit %d", len(answer), fuzzResponseBytes)
		}
		var out struct {
			Data   json.RawMessage `json:"data"`
			Errors []gqlError      `json:"errors"`
		}
		if err := json.Unmarshal(answer, &out); err != nil {
			t.Fatalf("answer is not JSON (%v): %.300s", err, answer)
		}
		for _, er := range out.Errors {
			if er.Extensions["code"] == "INTERNAL" || er.Message == "internal error" {
				t.Fatalf("INTERNAL for %q %s: %+v", query, variables, out.Errors)
			}
			if token == "" && strings.Contains(er.Message, "Did you mean") {
				t.Fatalf("anonymous caller told %q", er.Message)
			}
		}
		// Only introspection names an input type.
		if token == "" && bytes.Contains(out.Data, []byte("JobWhereInput")) {
			t.Fatalf("anonymous introspection answered: %.300s", out.Data)
		}
	})
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

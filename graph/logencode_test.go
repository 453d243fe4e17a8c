package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// Subscribers of one job with different selections (aliases, __typename,
// fragments, @skip by a variable, every field) each get exactly what
// gqlgen's own execution answers for that selection (the jobLogs query),
// over both transports and both subscriptions, although lines are encoded
// once per shape and shared. A subscriber of another tenant's job with the
// same shape and the same seqs gets its own job's lines only.
func TestLogSubscriptionShapes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		jobA, jobB := e.submit(a), e.submit(b)
		const every = "attempt seq service stream time text"
		shapes := []struct{ name, sel, frag string }{
			{name: "plain", sel: "seq text"},
			{name: "all", sel: every},
			{name: "aliases", sel: "n: seq __typename ...F text @skip(if: $no) t: time s: stream seq", frag: "fragment F on LogLine { x: text attempt }"},
			{name: "included", sel: "seq text @include(if: $no) ... on LogLine { __typename service }"},
		}
		type sub struct {
			name, sel, frag string
			batches         bool
			s               stream
			tn              *tenant
			job             string
		}
		var subs []*sub
		open := func(tn *tenant, job, name, sel, frag string, batches bool, transport string) {
			field := "l: jobLogs(jobId: $j)"
			if batches {
				field = "l: jobLogBatches(jobId: $j)"
			}
			q := fmt.Sprintf("subscription(%s) { %s { %s } } %s", params(sel), field, sel, frag)
			v := vars{"j": job}
			if strings.Contains(sel, "$no") {
				v["no"] = true
			}
			s := &sub{name: fmt.Sprintf("%s/%v/%s", name, batches, transport), sel: sel, frag: frag, batches: batches, tn: tn, job: job}
			if transport == "sse" {
				s.s = e.sse(t, tn.memberToken, q, v)
			} else {
				c := e.dialWS(t, tn.memberToken)
				c.subscribe("1", q, v)
				s.s = wsStream{c}
			}
			subs = append(subs, s)
		}
		for _, sh := range shapes {
			for _, batches := range []bool{false, true} {
				for _, transport := range []string{"sse", "websocket"} {
					open(a, jobA, sh.name, sh.sel, sh.frag, batches, transport)
				}
			}
		}
		open(b, jobB, "other tenant", "seq text", "", false, "sse")
		open(b, jobB, "other tenant", "seq text", "", true, "websocket")
		// Every follow joined its job's reader: the lines below come
		// through it, shared, not from history each follow reads itself.
		waitFor(t, 30*time.Second, func() bool { return e.logs.Running() >= int64(len(subs)) })
		const n = 20
		e.appendLines(jobA, 1, n, "alpha's line")
		e.appendLines(jobB, 1, n, "beta's <line> \"quoted\" é")
		for _, s := range subs {
			// gqlgen's own answer for the same selection.
			q := fmt.Sprintf("query(%s) { l: jobLogs(jobId: $j) { %s } } %s", params(s.sel), s.sel, s.frag)
			v := vars{"j": s.job}
			if strings.Contains(s.sel, "$no") {
				v["no"] = true
			}
			r := e.gql(s.tn.memberToken, q, v)
			r.ok(t)
			var want struct{ L []json.RawMessage }
			r.decode(t, &want)
			if len(want.L) != n {
				t.Fatalf("the query answered %d lines, want %d", len(want.L), n)
			}
			var got []json.RawMessage
			for len(got) < n {
				ev := s.s.event()
				if ev.Complete || len(ev.Errors) > 0 {
					t.Fatalf("%s: after %d lines: complete=%v errors=%+v", s.name, len(got), ev.Complete, ev.Errors)
				}
				if s.batches {
					var d struct{ L []json.RawMessage }
					if err := json.Unmarshal(ev.Data, &d); err != nil {
						t.Fatal(err)
					}
					got = append(got, d.L...)
				} else {
					var d struct{ L json.RawMessage }
					if err := json.Unmarshal(ev.Data, &d); err != nil {
						t.Fatal(err)
					}
					got = append(got, d.L)
				}
			}
			if len(got) != n {
				t.Fatalf("%s: got %d lines, want %d", s.name, len(got), n)
			}
			for i := range got {
				if !bytes.Equal(got[i], want.L[i]) {
					t.Fatalf("%s: line %d is\n%s\nwant (as the query answers)\n%s", s.name, i+1, got[i], want.L[i])
				}
			}
			if wantText := map[string]string{jobA: "alpha", jobB: "beta"}[s.job]; !strings.Contains(string(got[0]), wantText) && strings.Contains(s.sel, "text") {
				t.Fatalf("%s: got %s, want a line of %s", s.name, got[0], wantText)
			}
		}
		e.endJob(jobA)
		e.endJob(jobB)
		for _, s := range subs {
			expectComplete(t, s.s)
		}
	})
}

// params declares the variables a selection of TestLogSubscriptionShapes
// uses: GraphQL refuses a declared variable that is not used.
func params(sel string) string {
	if strings.Contains(sel, "$no") {
		return "$j: ID!, $no: Boolean!"
	}
	return "$j: ID!"
}

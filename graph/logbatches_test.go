package graph_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

const subLogBatches = `subscription($j: ID!, $f: Int, $m: Int) { jobLogBatches(jobId: $j, fromSeq: $f, max: $m) { seq service stream text } }`

// expectBatches reads batches from s until lines from..to have come, in
// order, none larger than max; it returns how many batches carried them.
func expectBatches(t *testing.T, s stream, from, to, max int) int {
	t.Helper()
	n := 0
	for want := from; want <= to; n++ {
		ev := s.event()
		if ev.Complete || len(ev.Errors) > 0 {
			t.Fatalf("waiting for line %d: complete=%v errors=%+v", want, ev.Complete, ev.Errors)
		}
		var d struct{ JobLogBatches []logLine }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.JobLogBatches) == 0 || len(d.JobLogBatches) > max {
			t.Fatalf("a batch of %d lines, want 1..%d", len(d.JobLogBatches), max)
		}
		for _, l := range d.JobLogBatches {
			if l.Seq != int64(want) || l.Text != fmt.Sprintf("line %d", want) {
				t.Fatalf("got %+v, want line %d", l, want)
			}
			want++
		}
	}
	return n
}

// Batches carry every line once, in order, never more than max, over both
// transports; a backlog comes in fewer messages than lines; the end and
// resumption are jobLogs'.
func TestJobLogBatchesFollow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("batches")
		for _, transport := range []string{"websocket", "sse"} {
			t.Run(transport, func(t *testing.T) {
				job := e.submit(a)
				open := func(from, max int) stream {
					v := vars{"j": job, "f": from, "m": max}
					if transport == "sse" {
						return e.sse(t, a.memberToken, subLogBatches, v)
					}
					c := e.dialWS(t, a.memberToken)
					c.subscribe("1", subLogBatches, v)
					return wsStream{c}
				}
				e.appendLines(job, 1, 600)
				s := open(1, 100)
				if n := expectBatches(t, s, 1, 600, 100); n >= 600 {
					t.Errorf("600 stored lines came in %d messages: not batched", n)
				}
				e.appendLines(job, 601, 610)
				expectBatches(t, s, 601, 610, 100)
				e.endJob(job)
				expectComplete(t, s)

				s = open(605, 1)
				expectBatches(t, s, 605, 610, 1)
				expectComplete(t, s)
			})
		}
	})
}

// max outside 1..1000 is refused before anything is read; another
// tenant's job is NOT_FOUND and an anonymous caller UNAUTHENTICATED, as
// for jobLogs.
func TestJobLogBatchesRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		job := e.submit(a)
		e.appendLines(job, 1, 3)
		for _, max := range []int{0, -1, 1001} {
			expectCode(t, e.sse(t, a.memberToken, subLogBatches, vars{"j": job, "m": max}), "BAD_USER_INPUT")
		}
		expectCode(t, e.sse(t, b.adminToken, subLogBatches, vars{"j": job}), "NOT_FOUND")
		c := e.dialWS(t, b.adminToken)
		c.subscribe("1", subLogBatches, vars{"j": job})
		expectCode(t, wsStream{c}, "NOT_FOUND")
		expectCode(t, e.sse(t, "", subLogBatches, vars{"j": job}), "UNAUTHENTICATED")
	})
}

package graph_test

import (
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
)

// slowHang bounds the waits here: it only tells a hang from a slow machine.
const slowHang = 90 * time.Second

// A WebSocket subscriber that never reads stalls nobody else: while it
// holds its connection full, another subscriber of the same job on its own
// connection gets every stored line, the lines signalled afterwards and the
// end, and the slow one's follow is still held (the stall limit is far
// longer than the test, so this holds on any machine). When the slow client
// goes away its follow ends too. That a stalled subscriber is dropped and
// told RATE_LIMITED is TestSlowSubscriberDropped's.
//
// Not parallel: it counts the follows of the whole process.
func TestSlowWebSocketSubscriberStallsNobody(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, func(r *graph.Resolver) {
			r.Follow = joblog.Options{Buffer: 8, StallAfter: time.Hour}
		})
		a := e.newTenant("slow")
		job := e.submit(a)
		// Far more than the socket buffers hold, so the slow one's writes
		// block.
		big := strings.Repeat("x", 8<<10)
		const stored = 3000
		for from := 1; from <= stored; from += 500 {
			e.appendLines(job, from, from+499, big)
		}
		slow := e.dialWS(t, a.memberToken)
		slow.subscribe("slow", subLogs, vars{"j": job})
		waitFor(t, slowHang, func() bool { return e.logs.Running() == 1 })

		fast := e.dialWS(t, a.memberToken)
		fast.subscribe("fast", subLogs, vars{"j": job})
		read := func(want int) {
			t.Helper()
			for n := 0; n < want; {
				ev := fast.event(slowHang)
				if ev.Complete || len(ev.Errors) > 0 {
					t.Fatalf("fast subscriber after %d lines: %+v", n, ev)
				}
				n++
			}
		}
		read(stored)
		// Lines signalled now go through the bus to both followers.
		e.appendLines(job, stored+1, stored+10)
		read(10)
		e.endJob(job)
		if ev := fast.event(slowHang); !ev.Complete {
			t.Fatalf("fast subscriber: got %+v, want the end", ev)
		}
		// The slow follow was held all along, not dropped first so the fast
		// one could pass.
		waitFor(t, slowHang, func() bool { return e.logs.Running() == 1 })
		if n := e.logs.Running(); n != 1 {
			t.Fatalf("%d follows running; want the slow one still held", n)
		}
		_ = slow.conn.CloseNow()
		waitFor(t, slowHang, func() bool { return e.logs.Running() == 0 })
	})
}

package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
)

// slowHang bounds the waits here: it only tells a hang from a slow machine.
const slowHang = 90 * time.Second

// A WebSocket subscriber that never reads is cut off, and stalls nobody
// else: while it holds its connection full, another subscriber of the same
// job on its own connection gets every stored line, the lines signalled
// afterwards and the end; then the slow one's follow ends and its
// connection closes without a normal completion. (No RATE_LIMITED error
// reaches it, nor is one raised: the write deadline, as long as the
// follow's stall limit and started first, closes the connection, which
// cancels the follow before it counts as stalled.)
//
// Not parallel: it counts the follows of the whole process.
func TestSlowWebSocketSubscriberStallsNobody(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, func(r *graph.Resolver) {
			// Ten times what the fast reader takes on a loaded machine, so
			// the slow one is still held when the fast one is done.
			r.Follow = joblog.Options{Buffer: 8, StallAfter: 30 * time.Second}
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
		if n := e.logs.Running(); n == 0 {
			t.Fatal("the slow subscriber was dropped before the fast one finished: the fast one waited behind it")
		}

		waitFor(t, slowHang, func() bool { return e.logs.Running() == 0 })
		n := 0
		for {
			m, err := slow.next(slowHang)
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after %d messages the slow connection is still open; want it closed by the server", n)
			}
			if err != nil {
				break // the server closed the connection
			}
			if m.Type == "complete" {
				t.Fatal("the slow stream completed normally; want it cut off")
			}
			if m.Type == "error" && !strings.Contains(string(m.Payload), "RATE_LIMITED") {
				t.Fatalf("the slow stream ended with %s; want RATE_LIMITED or a closed connection", m.Payload)
			}
			n++
		}
		if n >= stored+10 {
			t.Errorf("the slow subscriber got all %d lines; want it cut off", n)
		}
		t.Logf("the slow subscriber read %d messages before its connection closed", n)
	})
}

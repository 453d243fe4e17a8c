package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

const (
	subLogs   = `subscription($j: ID!, $f: Int) { jobLogs(jobId: $j, fromSeq: $f) { seq service stream text } }`
	subEvents = `subscription($j: ID!) { jobEvents(jobId: $j) { service status reason } }`
)

// submit submits a one-service job as tn's member and returns its ID.
func (e *env) submit(tn *tenant) string {
	e.t.Helper()
	r := e.gql(tn.memberToken, `mutation { submitJob(spec: {queue: "default", services: [{name: "main", command: ["true"], cpu: 1}]}) { id } }`, nil)
	r.ok(e.t)
	var out struct{ SubmitJob struct{ ID string } }
	r.decode(e.t, &out)
	return out.SubmitJob.ID
}

// appendLines stores lines from..to of job (text "line N", service main,
// even ones on stderr) and signals them, as the tunnel does.
func (e *env) appendLines(job string, from, to int, text ...string) {
	e.t.Helper()
	var lines []wire.LogLine
	for i := from; i <= to; i++ {
		l := wire.LogLine{Service: "main", Stream: wire.Stdout, Seq: uint64(i), Time: time.Now(), Text: fmt.Sprintf("line %d", i)}
		if i%2 == 0 {
			l.Stream = wire.Stderr
		}
		if len(text) > 0 {
			l.Text = text[0]
		}
		lines = append(lines, l)
	}
	ctx := context.Background()
	if err := e.logs.Append(ctx, job, 1, lines); err != nil {
		e.t.Fatal(err)
	}
	if err := e.bus.Publish(ctx, notify.TopicJob, job); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) endJob(job string) {
	e.t.Helper()
	if err := e.jobs.MarkEnded(context.Background(), job, "COMPLETE", "exit 0", time.Now()); err != nil {
		e.t.Fatal(err)
	}
}

type logLine struct {
	Seq     int64
	Service string
	Stream  string
	Text    string
}

// stream is either transport's subscription.
type stream interface{ event() event }

type wsStream struct{ c *wsClient }

func (s wsStream) event() event { return s.c.event(30 * time.Second) }

// expectLines reads lines from..to in order from s.
func expectLines(t *testing.T, s stream, from, to int) {
	t.Helper()
	for want := from; want <= to; want++ {
		ev := s.event()
		if ev.Complete || len(ev.Errors) > 0 {
			t.Fatalf("waiting for line %d: complete=%v errors=%+v", want, ev.Complete, ev.Errors)
		}
		var d struct{ JobLogs logLine }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		l := d.JobLogs
		stream := "stdout"
		if want%2 == 0 {
			stream = "stderr"
		}
		if l.Seq != int64(want) || l.Text != fmt.Sprintf("line %d", want) || l.Service != "main" || l.Stream != stream {
			t.Fatalf("got %+v, want line %d on %s", l, want, stream)
		}
	}
}

func expectComplete(t *testing.T, s stream) {
	t.Helper()
	if ev := s.event(); !ev.Complete || len(ev.Errors) > 0 {
		t.Fatalf("got %s %+v, want the end of the stream", ev.Data, ev.Errors)
	}
}

func expectCode(t *testing.T, s stream, code string) {
	t.Helper()
	ev := s.event()
	if len(ev.Errors) == 0 {
		t.Fatalf("got %s, want %s", ev.Data, code)
	}
	if got, _ := ev.Errors[0].Extensions["code"].(string); got != code {
		t.Fatalf("got %+v, want %s", ev.Errors, code)
	}
}

// History first, then live lines, then the end; a resubscription from a
// sequence number gets exactly the rest. Over both transports.
func TestJobLogsFollow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("logs")
		for _, transport := range []string{"websocket", "sse"} {
			t.Run(transport, func(t *testing.T) {
				job := e.submit(a)
				open := func(from int) stream {
					if transport == "sse" {
						return e.sse(t, a.memberToken, subLogs, vars{"j": job, "f": from})
					}
					c := e.dialWS(t, a.memberToken)
					c.subscribe("1", subLogs, vars{"j": job, "f": from})
					return wsStream{c}
				}
				e.appendLines(job, 1, 5)
				s := open(1)
				expectLines(t, s, 1, 5)
				e.appendLines(job, 6, 8)
				expectLines(t, s, 6, 8)
				// Late lines are held back until the gap fills: no skips.
				e.appendLines(job, 10, 12)
				e.appendLines(job, 9, 9)
				expectLines(t, s, 9, 12)
				e.endJob(job)
				expectComplete(t, s)

				s = open(7)
				expectLines(t, s, 7, 12)
				expectComplete(t, s)

				// The plain query pages through the history.
				r := e.gql(a.memberToken, `query($j: ID!) { jobLogs(jobId: $j, fromSeq: 4, first: 3) { seq } }`, vars{"j": job})
				r.ok(t)
				if got := string(r.Data); got != `{"jobLogs":[{"seq":4},{"seq":5},{"seq":6}]}` {
					t.Errorf("jobLogs query: %s", got)
				}
			})
		}
	})
}

// Events replay from submission and follow until the job ends.
func TestJobEventsFollow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("events")
		job := e.submit(a)
		c := e.dialWS(t, a.memberToken)
		c.subscribe("1", subEvents, vars{"j": job})
		status := func() string {
			t.Helper()
			ev := c.event(30 * time.Second)
			if ev.Complete || len(ev.Errors) > 0 {
				t.Fatalf("complete=%v errors=%+v", ev.Complete, ev.Errors)
			}
			var d struct {
				JobEvents struct{ Status, Reason string }
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			return d.JobEvents.Status
		}
		if got := status(); got != "PENDING" {
			t.Fatalf("first event %s, want PENDING", got)
		}
		if err := e.jobs.MarkRunning(context.Background(), job, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := status(); got != "RUNNING" {
			t.Fatalf("event %s, want RUNNING", got)
		}
		e.endJob(job)
		for got := status(); got != "COMPLETE"; got = status() {
			// service-level events may come first
		}
		expectComplete(t, wsStream{c})
	})
}

// Another tenant's job is NOT_FOUND; without a token, UNAUTHENTICATED.
func TestJobLogsIsolation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		job := e.submit(a)
		e.appendLines(job, 1, 3)

		for _, q := range []string{subLogs, subEvents} {
			c := e.dialWS(t, b.adminToken)
			c.subscribe("1", q, vars{"j": job, "f": 1})
			expectCode(t, wsStream{c}, "NOT_FOUND")
			expectCode(t, e.sse(t, b.adminToken, q, vars{"j": job}), "NOT_FOUND")

			anon := e.dialWS(t, "")
			anon.subscribe("1", q, vars{"j": job})
			expectCode(t, wsStream{anon}, "UNAUTHENTICATED")
			expectCode(t, e.sse(t, "", q, vars{"j": job}), "UNAUTHENTICATED")
		}
		if e.dialWS(t, "lv9_forged") != nil {
			t.Error("a forged token was accepted on a websocket")
		}
		if c := e.dialWSClose(t, "lv9_forged"); c != 4403 {
			t.Errorf("a forged token closed the websocket with %d, want 4403", c)
		}
		r := e.gql(b.adminToken, `query($j: ID!) { jobLogs(jobId: $j) { seq } }`, vars{"j": job})
		if r.code() != "NOT_FOUND" {
			t.Errorf("jobLogs of another tenant: %s %+v", r.Data, r.Errors)
		}
	})
}

// A subscriber that stops reading is dropped instead of having its lines
// held forever: its follow ends; on a WebSocket it is told RATE_LIMITED
// when it reads again, an SSE stream is cut (never completed as if whole).
func TestSlowSubscriberDropped(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, func(r *graph.Resolver) {
			r.Follow = joblog.Options{Buffer: 8, StallAfter: 500 * time.Millisecond}
		})
		a := e.newTenant("slow")
		job := e.submit(a)
		// Far more than the socket buffers hold, so writes block.
		big := strings.Repeat("x", 8<<10)
		for from := 1; from <= 3000; from += 500 {
			e.appendLines(job, from, from+499, big)
		}
		t.Run("websocket", func(t *testing.T) {
			c := e.dialWS(t, a.memberToken)
			c.subscribe("1", subLogs, vars{"j": job})
			e.waitDropped(t)
			// Reading late, the client gets the lines the connection held,
			// then why its stream ended: RATE_LIMITED, not a completion
			// and not only a cut connection.
			n := 0
			for {
				m, err := c.next(30 * time.Second)
				if err != nil {
					t.Fatalf("after %d messages the connection ended (%v) without RATE_LIMITED", n, err)
				}
				if m.Type == "complete" {
					t.Fatal("the stream completed normally; want it dropped")
				}
				if m.Type == "error" {
					if !strings.Contains(string(m.Payload), "RATE_LIMITED") {
						t.Fatalf("the stream ended with %s; want RATE_LIMITED", m.Payload)
					}
					break
				}
				n++
			}
			if n >= 3000 {
				t.Errorf("got all %d lines; want the subscriber dropped", n)
			}
		})
		t.Run("sse", func(t *testing.T) {
			s := e.sse(t, a.memberToken, subLogs, vars{"j": job})
			e.waitDropped(t)
			n := 0
			for s.sc.Scan() {
				switch line := s.sc.Text(); {
				case line == "event: complete":
					t.Fatal("the stream completed normally; want it dropped")
				case strings.HasPrefix(line, "data: "):
					n++
				}
			}
			if n >= 3000 {
				t.Errorf("got all %d lines; want the subscriber dropped", n)
			}
		})
	})
}

// waitDropped waits until a follow started and then ended without being read.
func (e *env) waitDropped(t *testing.T) {
	t.Helper()
	waitFor(t, 30*time.Second, func() bool { return e.logs.Running() > 0 })
	waitFor(t, 30*time.Second, func() bool { return e.logs.Running() == 0 })
}

func waitFor(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One WebSocket holds at most 100 subscriptions: each holds a buffer.
func TestSubscriptionsPerConnection(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("many")
		job := e.submit(a)
		c := e.dialWS(t, a.memberToken)
		for i := 1; i <= 101; i++ {
			c.subscribe(fmt.Sprint(i), subLogs, vars{"j": job})
		}
		// Exactly one is refused; they start concurrently, so any one.
		replyTo := func(id string) string {
			t.Helper()
			for {
				m, err := c.next(30 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if (id == "" || m.ID == id) && m.Type == "next" {
					return m.ID + " " + string(m.Payload)
				}
			}
		}
		refused, reply, _ := strings.Cut(replyTo(""), " ")
		if !strings.Contains(reply, "RATE_LIMITED") {
			t.Fatalf("got %s, want one subscription refused", reply)
		}
		// Ending one makes room for another.
		victim := "1"
		if refused == "1" {
			victim = "2"
		}
		c.send(wsMsg{ID: victim, Type: "complete"})
		for i := 0; ; i++ {
			id := fmt.Sprint("more", i)
			c.subscribe(id, subEvents, vars{"j": job})
			r := replyTo(id)
			if strings.Contains(r, "PENDING") {
				break
			}
			if !strings.Contains(r, "RATE_LIMITED") || i > 100 {
				t.Fatalf("got %s", r)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

package ui_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// sseEvent is one server-sent event.
type sseEvent struct{ id, event, data string }

// openStream GETs an event stream as b and returns its events as they come.
func (b *browser) openStream(ctx context.Context, path, lastID string) <-chan sseEvent {
	b.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.e.srv.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body.Close()
		b.t.Fatalf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 16)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

// next is the next event, or a failure when the stream ends first.
func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	ev, ok := <-events
	if !ok {
		t.Fatal("the stream ended early")
	}
	return ev
}

// The service panel's log stream pushes each new line as it is stored (no
// reload, no polling by the page), ends once the job has, and resumes after
// Last-Event-ID.
func TestDashboardLogStream(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		j := e.submit(e.admin, "streamed", "true")
		sys := viewer.SystemContext(context.Background())
		appendLine := func(seq uint64, text string) {
			t.Helper()
			err := (&joblog.Service{DB: e.db}).Append(sys, j.ID, 1, []wire.LogLine{{Seq: seq, Service: "main", Stream: wire.Stdout, Time: time.Now(), Text: text}})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.jobs.Bus.Publish(sys, notify.TopicJob, j.ID); err != nil {
				t.Fatal(err)
			}
		}
		appendLine(1, "first")
		b := e.browser()
		b.signIn(adminEmail)
		// The deadline only catches a hang.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		events := b.openStream(ctx, "/jobs/"+j.ID+"/logs?service=main", "")
		if ev := next(t, events); ev.event != "line" || ev.id != "1" || !strings.Contains(ev.data, `"text":"first"`) {
			t.Fatalf("first event %+v; want line 1", ev)
		}
		appendLine(2, "second")
		if ev := next(t, events); ev.event != "line" || ev.id != "2" || !strings.Contains(ev.data, `"text":"second"`) {
			t.Fatalf("event after the second line was stored: %+v", ev)
		}
		if err := e.jobs.MarkEnded(sys, j.ID, job.StatusComplete, "done", time.Now()); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, events); ev.event != "end" {
			t.Fatalf("event after the job ended: %+v; want end", ev)
		}

		// A reconnecting EventSource sends the last ID it has.
		again := b.openStream(ctx, "/jobs/"+j.ID+"/logs?service=main", "1")
		if ev := next(t, again); ev.id != "2" {
			t.Fatalf("after Last-Event-ID 1 the stream sent %+v; want line 2", ev)
		}
		if ev := next(t, again); ev.event != "end" {
			t.Fatalf("after the last line: %+v; want end", ev)
		}
	})
}

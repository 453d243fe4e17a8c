package ui_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Signing out ends the session's open log streams at once (the session
// was checked when the stream started, not since); another session's
// stream of the same job goes on.
func TestSignOutEndsLogStream(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		j := e.submit(e.admin, "streamed", "true")
		sys := viewer.SystemContext(context.Background())
		appendLine := func(seq uint64) {
			t.Helper()
			err := (&joblog.Service{DB: e.db}).Append(sys, j.ID, 1, []wire.LogLine{{Seq: seq, Service: "main", Stream: wire.Stdout, Time: time.Now(), Text: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.jobs.Bus.Publish(sys, notify.TopicJob, j.ID); err != nil {
				t.Fatal(err)
			}
		}
		appendLine(1)
		leaving, staying := e.browser(), e.browser()
		leaving.signIn(adminEmail)
		staying.signIn(adminEmail)
		// The deadline only catches a hang.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		gone := leaving.openStream(ctx, "/jobs/"+j.ID+"/logs?service=main", "")
		kept := staying.openStream(ctx, "/jobs/"+j.ID+"/logs?service=main", "")
		for _, s := range []<-chan sseEvent{gone, kept} {
			if ev := next(t, s); ev.id != "1" {
				t.Fatalf("first event %+v; want line 1", ev)
			}
		}

		if res, body := leaving.post("/signout", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-out: %d %s", res.StatusCode, body)
		}
		for ev := range gone {
			t.Fatalf("the signed-out session's stream sent %+v", ev)
		}
		if ctx.Err() != nil {
			t.Fatal("the signed-out session's stream did not end")
		}

		appendLine(2)
		if ev := next(t, kept); ev.id != "2" {
			t.Fatalf("the other session's stream sent %+v; want line 2", ev)
		}
	})
}

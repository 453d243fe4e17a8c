package jobs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/app/live"
)

// logLine is one line as the stream sends it (JSON in an SSE data field).
type logLine struct {
	Seq    int64  `json:"seq"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// logs streams one service's log lines as server-sent events, from seq
// "from" (or the Last-Event-ID a reconnecting EventSource sends) on, until
// the job has ended: "line" events, then one "end". It follows with
// joblog.Service.Follow, as the GraphQL subscription does: no polling, lines are
// pushed as the bus signals them. The session authenticates it, and the
// viewer's privacy rules apply (another tenant's job is 404); it ends when
// the session's token does (auth.Hold).
func (h *handlers) logs(w http.ResponseWriter, r *http.Request) error {
	id, service := r.PathValue("id"), r.URL.Query().Get("service")
	from := int64(1)
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("from")} {
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return fault.Invalid("from", "must be a line number")
		}
		if s == r.Header.Get("Last-Event-ID") {
			n++ // the last line the browser has; go on after it
		}
		from = n
		break
	}
	// The stream ends when the session signs out or its token is revoked
	// or expires: the session was checked once, when the stream started.
	// It counts against the session's live streams (app.MaxLiveStreams).
	ctx, cancel, err := h.rt.Deps.Auth.HoldAtMost(r.Context(), app.MaxLiveStreams)
	if err != nil {
		return err
	}
	defer cancel()
	// A follow that fails (a database error, a browser too slow to keep
	// up) ends the response without "end": EventSource then reconnects
	// with Last-Event-ID and the stream resumes after the last line shown.
	var failed atomic.Bool
	lines, err := h.rt.Deps.Logs.Follow(ctx, id, 0, from, joblog.Options{Log: h.rt.Deps.Log,
		OnError: func(err error) {
			failed.Store(true)
			h.rt.Deps.Log.Warn("following logs for the dashboard", "job", id, "err", err)
		}})
	if err != nil {
		return err
	}
	rc, _ := live.Open(w)
	tick := time.NewTicker(live.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := live.KeepAliveComment(w, rc); err != nil {
				return nil
			}
		case l, ok := <-lines:
			if !ok {
				if failed.Load() {
					return nil
				}
				_, _ = fmt.Fprint(w, "event: end\ndata: {}\n\n")
				_ = rc.Flush()
				return nil
			}
			if service == "" || l.Service == service {
				b, _ := json.Marshal(logLine{Seq: l.Seq, Stream: l.Stream, Text: l.Text})
				if _, err := fmt.Fprintf(w, "id: %d\nevent: line\ndata: %s\n\n", l.Seq, b); err != nil {
					return nil // the browser went away
				}
			}
			if len(lines) == 0 { // flush once the burst is written
				_ = rc.Flush()
			}
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

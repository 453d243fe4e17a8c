package app

import (
	"net/http"

	"github.com/levers9/levers9/ui/app/live"
)

// MaxLiveStreams bounds the live pages one session keeps open on one
// replica: each re-reads its page on every signal, so a session opening
// them by the thousand would multiply the server's work. A person has a
// few tabs open.
const MaxLiveStreams = 32

// Live answers r with a live.Serve stream of push, woken by wake (a notify
// bus subscription), that ends with the session (signed out, token revoked
// or expired). A failing push is logged and ends the stream; the browser
// reconnects and gets the whole state again. Handlers return its result.
func (rt *Router) Live(w http.ResponseWriter, r *http.Request, wake <-chan struct{}, push live.Push) error {
	ctx, cancel, err := rt.Deps.Auth.HoldAtMost(r.Context(), MaxLiveStreams)
	if err != nil {
		return err // 429: the browser's EventSource does not retry it
	}
	defer cancel()
	if err := live.Serve(ctx, w, wake, push); err != nil {
		rt.Deps.Log.Warn("live dashboard stream", "path", r.URL.Path, "err", err)
	}
	return nil
}

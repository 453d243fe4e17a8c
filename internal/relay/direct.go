package relay

import (
	"net/http"
	"strings"

	"github.com/levers9/levers9/internal/fault"
)

// Dest is where another front door relays a request: port Port (a name
// or number) of service Service of job Job, the request having come
// under path Prefix (cut off, and passed on as X-Forwarded-Prefix).
type Dest struct {
	Job, Service, Port string
	Prefix             string
}

// Direct relays r, plain HTTP or a WebSocket upgrade, to d as the viewer
// in r's context may reach it (the caller authenticated the request and
// chose that viewer: no token or session is read here). Answers under
// the server's own origin are sandboxed: whoever wrote the service is
// not the dashboard.
//
// On a replica that does not hold the node's stream tunnel, r is
// forwarded as it came to the replica that does, which serves it again
// through the same front door (same URL, credentials included) and must
// then hold the tunnel: a forwarded request is never forwarded again.
func (h *Handler) Direct(w http.ResponseWriter, r *http.Request, d Dest) {
	if !strings.HasPrefix(r.URL.Path, d.Prefix) {
		fail(w, fault.New(fault.Internal, "relay: path %.100q is not under %.100q", r.URL.Path, d.Prefix), h.Relay)
		return
	}
	t, err := h.Relay.Resolve(r.Context(), d.Job, d.Service, d.Port)
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if h.forward(w, r, t) {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, d.Prefix)
	raw := ""
	if r.URL.RawPath != "" {
		raw = strings.TrimPrefix(r.URL.RawPath, d.Prefix)
	}
	h.proxy(w, r, t, d.Prefix, path, raw, true)
}

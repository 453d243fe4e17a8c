package deployapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/relay"
)

// box relays a request, plain HTTP or a WebSocket, to port PORT (the
// first segment after the box's name) of a ready container of the box,
// started when none runs; the prefix up to the port is cut off. A port
// the box does not declare is the same 404 as an unknown box.
func (a *API) box(w http.ResponseWriter, r *http.Request, c call) {
	first, _, _ := strings.Cut(strings.TrimPrefix(c.route.Rest, "/"), "/")
	port, err := strconv.Atoi(first)
	if err != nil || strconv.Itoa(port) != first || !functions.HasPort(c.fn, port) {
		a.fail(w, fault.Missing("deployment "+c.route.Prefix()+"/"+clipSegment(first)), "")
		return
	}
	if a.cfg.Relay == nil {
		a.fail(w, fault.New(fault.Unavailable, "this server relays no boxes"), "")
		return
	}
	// The prefix as the request spelled it (/pod is /box's alias).
	prefix := strings.TrimSuffix(r.URL.Path, c.route.Rest) + "/" + first
	if r.URL.Path == prefix {
		// /box/NAME/PORT serves what /box/NAME/PORT/ does: relative
		// links in a directory listing need the slash.
		http.Redirect(w, r, prefix+"/"+query(r), http.StatusPermanentRedirect)
		return
	}
	jobID, err := a.cfg.Functions.BoxContainer(c.ctx, c.fn, syncTimeout(c.fn))
	if err != nil {
		a.fail(w, err, "")
		return
	}
	a.cfg.Relay.Direct(w, r.WithContext(c.ctx), relay.Dest{Job: jobID, Service: functions.RunnerService, Port: first, Prefix: prefix})
}

func query(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

func clipSegment(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

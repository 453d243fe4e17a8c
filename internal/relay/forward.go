package relay

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/levers9/levers9/internal/fault"
)

// forward sends r as it came (credentials included: the other replica
// authenticates it again) to the replica holding t's node, if that is
// another one, and reports whether it did.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, t Target) bool {
	to, err := h.Relay.Elsewhere(r.Context(), t)
	if err != nil {
		fail(w, err, h.Relay)
		return true
	}
	if to == "" {
		return false
	}
	if r.Header.Get(ForwardedHeader) != "" {
		fail(w, fault.New(fault.Unavailable, "the node's tunnel is moving between server replicas; try again"), h.Relay)
		return true
	}
	u, err := url.Parse(to)
	if err != nil || u.Host == "" {
		fail(w, fault.New(fault.Unavailable, "the server replica holding the node has no usable address (%.80q)", to), h.Relay)
		return true
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // Origin checks and the relay domain see the user's host
			pr.Out.Header.Set(ForwardedHeader, "1")
			pr.SetXForwarded()
		},
		Transport: forwardTransport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the client left
			}
			fail(w, fault.New(fault.Unavailable, "the server replica holding the node did not answer: %v", err), h.Relay)
		},
	}
	rp.ServeHTTP(w, r)
	return true
}

// forwardTransport carries requests between replicas. A replica that is
// gone must make an UNAVAILABLE answer soon, not a hang: dialing is
// bounded; answers are not (a relayed service may take its time).
var forwardTransport = &http.Transport{
	Proxy:                 nil, // replicas reach each other directly
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConnsPerHost:   32,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   5 * time.Second,
	ExpectContinueTimeout: time.Second,
}

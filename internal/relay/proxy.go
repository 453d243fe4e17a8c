package relay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// proxyPath relays /relay/JOB/SERVICE/PORT/… to the service, the prefix
// cut off and passed on as X-Forwarded-Prefix.
func (h *Handler) proxyPath(w http.ResponseWriter, r *http.Request) {
	t, err := h.Relay.Resolve(r.Context(), r.PathValue("job"), r.PathValue("service"), r.PathValue("port"))
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if h.forward(w, r, t) {
		return
	}
	prefix := "/relay/" + r.PathValue("job") + "/" + r.PathValue("service") + "/" + r.PathValue("port")
	path := strings.TrimPrefix(r.URL.Path, prefix)
	raw := strings.TrimPrefix(r.URL.RawPath, prefix)
	if r.URL.RawPath == "" {
		raw = ""
	}
	// The dashboard's origin serves this page: a page of someone else's
	// job would run its scripts with the viewer's rights on the
	// dashboard. Only the owner gets it as is; anyone else gets it
	// sandboxed (an opaque origin). The relay domain has no such limit.
	v := viewer.FromContext(r.Context())
	sandbox := v == nil || v.UserID != t.Job.OwnerID
	h.proxy(w, r, t, prefix, path, raw, sandbox)
}

type targetKey struct{}

// proxy relays r to t's port with path (raw: its escaped form, if any).
func (h *Handler) proxy(w http.ResponseWriter, r *http.Request, t Target, prefix, path, raw string, sandbox bool) {
	// The job is marked used when bytes flow to it (activeConn), not for
	// a request that never reached it.
	if r.Header.Get("Upgrade") != "" {
		// An upgraded connection (a WebSocket) lives on after this one
		// authentication: it ends when the viewer's token does.
		ctx, cancel := h.hold(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
	}
	if path == "" {
		path = "/"
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = targetHost(t)
			pr.Out.URL.Path, pr.Out.URL.RawPath = path, raw
			// Applications check Origin against Host (WebSocket, CSRF):
			// they see the host the browser used.
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			// Never the client's own: links the application builds from it
			// must lead where the relay serves it.
			pr.Out.Header.Del("X-Forwarded-Prefix")
			if prefix != "" {
				pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			}
			h.stripCredentials(pr.Out)
			pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), targetKey{}, t))
		},
		Transport:  h.transport(),
		BufferPool: &copyBuffers,
		ModifyResponse: func(resp *http.Response) error {
			h.filterCookies(resp.Header, prefix)
			if prefix != "" {
				// Under the dashboard's origin a job may not widen a
				// service worker's scope past its prefix, nor clear the
				// dashboard's storage.
				resp.Header.Del("Service-Worker-Allowed")
				resp.Header.Del("Clear-Site-Data")
			}
			// Every answer was for an authenticated user: a shared cache
			// must never hand it to anyone else.
			resp.Header.Set("Cache-Control", PrivateCache(resp.Header.Values("Cache-Control")))
			if sandbox {
				resp.Header.Set("Content-Security-Policy", Sandbox)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client is gone: nobody to answer
			}
			if len(fault.Classify(err)) == 0 {
				err = fault.New(fault.Unavailable, "service %s of job %s did not answer on port %d: %v", t.Service.Name, t.Job.ID, t.Port, err)
			}
			fail(w, err, h.Relay)
		},
	}
	rp.ServeHTTP(w, r)
}

// targetHost names t for the transport's connection pool: connections
// are reused only for the same job attempt, service and port.
func targetHost(t Target) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%s/%d", t.Job.ID, t.Job.Attempt, t.Service.Name, t.Port))
	return hex.EncodeToString(sum[:12]) + ".relay.invalid"
}

// transport is the relay's HTTP client side: every connection is a TCP
// stream to the target in the request's context.
func (h *Handler) transport() *http.Transport {
	h.once.Do(func() {
		h.tr = &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				t, ok := ctx.Value(targetKey{}).(Target)
				if !ok || !strings.HasPrefix(addr, targetHost(t)+":") {
					return nil, fmt.Errorf("relay: no target for %s", addr)
				}
				c, err := h.Relay.Open(ctx, t, wire.StreamOpen{Kind: wire.StreamTCP})
				if err != nil {
					return nil, err
				}
				return &activeConn{Conn: c, touch: func() { h.Relay.Active.Touch(t.Job.ID) }}, nil
			},
			MaxIdleConnsPerHost: 32,
			// Fewer, larger reads of the stream: each costs a trip
			// through yamux.
			ReadBufferSize:  64 << 10,
			WriteBufferSize: 64 << 10,
			IdleConnTimeout: 90 * time.Second,
			// The streams already multiplex; one request per stream.
			ForceAttemptHTTP2: false,
		}
	})
	return h.tr
}

// filterCookies drops cookies a job's service may not set: levers9's own.
// Under a path prefix (the dashboard's origin, shared by every job) the
// others are scoped to the prefix and lose any Domain: a job's cookies
// are sent to that job only, never to another user's job nor to a
// sibling host.
func (h *Handler) filterCookies(hd http.Header, prefix string) {
	all := hd.Values("Set-Cookie")
	if len(all) == 0 {
		return
	}
	hd.Del("Set-Cookie")
	for _, sc := range all {
		c, err := http.ParseSetCookie(sc)
		if err != nil {
			continue // a browser would not take it either
		}
		if h.SessionCookie != "" && strings.EqualFold(c.Name, h.SessionCookie) || strings.HasPrefix(strings.ToLower(c.Name), relayCookiePrefix) {
			continue
		}
		if prefix != "" {
			c.Domain = ""
			if strings.HasPrefix(c.Path, "/") {
				c.Path = prefix + c.Path
			}
			if sc = c.String(); sc == "" {
				continue
			}
		}
		hd.Add("Set-Cookie", sc)
	}
}

// Sandbox is the Content-Security-Policy of answers a service or a
// function wrote, served under the dashboard's origin: a page there must
// not act with the visitor's session (an opaque origin).
const Sandbox = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

// PrivateCache is the Cache-Control directives cc with those letting a
// shared cache store the answer (public, s-maxage, proxy-revalidate)
// replaced by private: for answers to a signed-in caller.
func PrivateCache(cc []string) string {
	out := []string{"private"}
	for _, v := range cc {
		for d := range strings.SplitSeq(v, ",") {
			d = strings.TrimSpace(d)
			name, _, _ := strings.Cut(strings.ToLower(d), "=")
			switch strings.TrimSpace(name) {
			case "", "public", "private", "s-maxage", "proxy-revalidate":
				continue
			}
			out = append(out, d)
		}
	}
	return strings.Join(out, ", ")
}

// activeConn marks its job used whenever bytes flow.
type activeConn struct {
	net.Conn
	touch func()
}

func (c *activeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *activeConn) Write(b []byte) (int, error) {
	c.touch()
	return c.Conn.Write(b)
}

// copyBuffers are the relay's copy buffers: large, since every chunk
// through the relay costs a yamux frame and system calls at each hop.
var copyBuffers = bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *(b.p.Get().(*[]byte)) }
func (b *bufferPool) Put(p []byte) { b.p.Put(&p) }

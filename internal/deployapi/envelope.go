package deployapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/relay"
)

// requestEnvelope is an HTTP request as an HTTP-made task carries it
// (the runner reads it instead of a pickle). Prefix ("rootPath") and
// Scheme are what an ASGI app needs beyond the path (its root_path and
// scope["scheme"]).
type requestEnvelope struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Headers [][2]string `json:"headers"`
	Body    []byte      `json:"body"` // base64
	Prefix  string      `json:"rootPath"`
	Scheme  string      `json:"scheme"`
}

// responseEnvelope is an HTTP-made task's result: the answer to replay.
type responseEnvelope struct {
	Status  int        `json:"status"`
	Headers [][]string `json:"headers"`
	Body    []byte     `json:"body"` // base64
}

// droppedRequestHeaders never reach a function: levers9's credentials
// (the function's code must never see them), the replicas' own marker,
// and hop-by-hop headers.
var droppedRequestHeaders = map[string]bool{
	"authorization": true, "cookie": true, "proxy-authorization": true, "x-levers9-forwarded": true,
	"connection": true, "keep-alive": true, "te": true, "trailer": true, "transfer-encoding": true,
	"upgrade": true, "proxy-connection": true,
}

// readBody reads r's body, refusing one over MaxBody with 413.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, fault.New(fault.BadUserInput, "reading the request body: %v", err)
	}
	if len(b) > MaxBody {
		return nil, errTooLarge
	}
	return b, nil
}

// errTooLarge answers 413.
var errTooLarge = fault.New(fault.BadUserInput, "the request body is over %d bytes: pass large data by reference (a bucket's path, a URL)", MaxBody)

// envelope is r as a task's arguments, rest being the path under the
// deployment's prefix.
func envelope(r *http.Request, prefix, rest string, body []byte) ([]byte, error) {
	e := requestEnvelope{Method: r.Method, Path: rest, Query: r.URL.RawQuery, Body: body, Prefix: prefix, Scheme: "http"}
	if e.Body == nil {
		e.Body = []byte{}
	}
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		e.Scheme = "https"
	}
	e.Headers = append(e.Headers, [2]string{"host", r.Host})
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		lk := strings.ToLower(k)
		if droppedRequestHeaders[lk] || lk == "host" {
			continue
		}
		for _, v := range r.Header[k] {
			e.Headers = append(e.Headers, [2]string{lk, v})
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encoding a request envelope: %w", err)
	}
	return b, nil
}

// payload carries an envelope inline, or as a blob of the tenant acting
// in ctx when it is over the inline limit.
func (a *API) payload(ctx context.Context, env []byte) (functions.Payload, error) {
	if len(env) <= functions.InlineLimit {
		return functions.Payload{Data: env}, nil
	}
	if a.cfg.Blobs == nil {
		return functions.Payload{}, errTooLarge
	}
	sum := sha256.Sum256(env)
	h := hex.EncodeToString(sum[:])
	if _, err := a.cfg.Blobs.Put(ctx, blobs.KindPayload, h, bytes.NewReader(env), int64(len(env))); err != nil {
		return functions.Payload{}, fmt.Errorf("storing a request envelope: %w", err)
	}
	return functions.Payload{Blob: h}, nil
}

// maxResult bounds a result envelope read back from a blob.
const maxResult = 64 << 20

// result reads complete task t's response envelope.
func (a *API) result(ctx context.Context, t *ent.Task) (*responseEnvelope, error) {
	p := functions.ResultOf(t)
	if p == nil {
		return nil, fmt.Errorf("task %s is %s, not complete", t.ID, t.State)
	}
	data := p.Data
	if p.Blob != "" {
		if a.cfg.Blobs == nil {
			return nil, badResponse("its answer is a blob and this server keeps none")
		}
		rc, size, err := a.cfg.Blobs.OpenForTenant(ctx, t.TenantID, p.Blob)
		if err != nil {
			return nil, fmt.Errorf("opening the result of task %s: %w", t.ID, err)
		}
		defer rc.Close()
		if size > maxResult {
			return nil, badResponse(fmt.Sprintf("its answer of %d bytes is over %d", size, maxResult))
		}
		if data, err = io.ReadAll(io.LimitReader(rc, maxResult)); err != nil {
			return nil, fmt.Errorf("reading the result of task %s: %w", t.ID, err)
		}
	}
	var e responseEnvelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, badResponse("its answer is no response envelope: " + err.Error())
	}
	if e.Status < 200 || e.Status > 599 {
		return nil, badResponse("status " + strconv.Itoa(e.Status) + " is no final HTTP status")
	}
	for _, h := range e.Headers {
		if len(h) != 2 {
			return nil, badResponse("a header is no [name, value] pair")
		}
	}
	return &e, nil
}

// badResponseError is a function's answer the server cannot replay.
type badResponseError struct{ why string }

func (e *badResponseError) Error() string { return "the function's answer cannot be sent: " + e.why }

func badResponse(why string) error { return &badResponseError{why} }

func isBadResponse(err error) (*badResponseError, bool) {
	var b *badResponseError
	return b, errors.As(err, &b)
}

// droppedResponseHeaders are never replayed: the server frames the
// answer itself, and names its task.
var droppedResponseHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "te": true, "trailer": true, "transfer-encoding": true,
	"upgrade": true, "proxy-connection": true, "content-length": true, strings.ToLower(TaskHeader): true,
}

// replay writes e, the answer of task id to a request under prefix.
// Cookies are the function's own, scoped to its prefix (never levers9's,
// never another host's); private answers (a token's) are never stored by
// a shared cache.
func replay(w http.ResponseWriter, id string, e *responseEnvelope, prefix string, private bool) {
	hd := w.Header()
	for _, h := range e.Headers {
		name := strings.ToLower(strings.TrimSpace(h[0]))
		if name == "" || droppedResponseHeaders[name] || strings.ContainsAny(name, " :\r\n") {
			continue
		}
		v := h[1]
		if name == "set-cookie" {
			if v = scopeCookie(v, prefix); v == "" {
				continue
			}
		}
		hd.Add(name, v)
	}
	hd.Set(TaskHeader, id)
	hd.Set("Content-Security-Policy", relay.Sandbox) // deployments answer under the dashboard's origin
	if private {
		cc := hd.Values("Cache-Control")
		hd.Set("Cache-Control", relay.PrivateCache(cc))
	}
	hd.Set("Content-Length", strconv.Itoa(len(e.Body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.Body)
}

// scopeCookie is Set-Cookie value sc scoped to prefix, or "" when the
// cookie may not be set (levers9's own, or unreadable).
func scopeCookie(sc, prefix string) string {
	c, err := http.ParseSetCookie(sc)
	if err != nil || strings.HasPrefix(strings.ToLower(c.Name), "levers9") {
		return ""
	}
	c.Domain = ""
	if !strings.HasPrefix(c.Path, "/") {
		c.Path = "/"
	}
	c.Path = strings.TrimSuffix(prefix, "/") + c.Path
	return c.String()
}

package deployapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/relay"
)

// MaxIdempotencyKey is the longest Idempotency-Key taken.
const MaxIdempotencyKey = 200

// DefaultSyncTimeout is how long an endpoint call is waited for when its
// function says nothing.
const DefaultSyncTimeout = 60 * time.Second

// call is a request to a deployment, resolved.
type call struct {
	ctx   context.Context // acting for the function's owner (functions.Resolve)
	route functions.Route
	fn    *ent.Function
	// private: the caller sent a token (not the /pub/ form); its
	// answers must not be stored by shared caches.
	private bool
}

// ServeHTTP serves a deployment URL: the route taken apart by
// functions.ParseRoute only, the caller authenticated (the token's
// tenant and environment, or none for /pub/), the function resolved,
// then the call its kind makes.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, ok := functions.ParseRoute(r.URL.Path)
	if !ok {
		a.fail(w, fault.New(fault.NotFound, "no deployment at %.200q: deployment URLs are /job/NAME, /endpoint/NAME/…, /queue/NAME (then /vN for a version)", r.URL.Path), "")
		return
	}
	ctx := r.Context()
	c := call{route: route, private: route.Tenant == ""}
	if c.private {
		var err error
		if ctx, err = a.signedIn(r); err != nil {
			a.fail(w, err, "")
			return
		}
	}
	if isWebSocket(r) {
		// A WebSocket lives on after this authentication: it ends when
		// the caller's token does.
		held, cancel := a.cfg.Auth.Hold(ctx)
		defer cancel()
		ctx = held
	}
	fctx, f, err := a.cfg.Functions.Resolve(ctx, route)
	switch {
	case isNotFound(err) || (err == nil && functions.GroupOf(f.Kind) != route.Group):
		// Unknown, another tenant's or environment's, stopped, not
		// public: one answer, naming only what was asked.
		a.fail(w, fault.Missing("deployment "+route.Prefix()), "")
		return
	case err != nil:
		a.fail(w, err, "")
		return
	}
	c.ctx, c.fn = fctx, f
	if !c.private {
		release, err := a.anonymous.enter(f.ID, route.Prefix())
		if err != nil {
			a.fail(w, err, "")
			return
		}
		defer release()
	}
	switch f.Kind {
	case function.KindENDPOINT, function.KindASGI:
		a.endpoint(w, r, c)
	case function.KindREALTIME:
		a.realtime(w, r, c)
	case function.KindFUNCTION:
		a.job(w, r, c)
	case function.KindTASK_QUEUE:
		a.queue(w, r, c)
	case function.KindBOX:
		a.box(w, r, c)
	default:
		a.fail(w, fault.Missing("deployment "+route.Prefix()), "")
	}
}

func isNotFound(err error) bool {
	fs := fault.Classify(err)
	return len(fs) > 0 && fs[0].Code == fault.NotFound
}

// endpoint stores the request as a task and waits up to the function's
// sync timeout: its answer replayed, or 202 with the task's URL.
func (a *API) endpoint(w http.ResponseWriter, r *http.Request, c call) {
	if m := c.fn.HTTPMethod; c.fn.Kind == function.KindENDPOINT && m != "" && !strings.EqualFold(r.Method, m) {
		a.methodNotAllowed(w, r, c, strings.ToUpper(m))
		return
	}
	t, ok := a.store(w, r, c, nil, "")
	if !ok {
		return
	}
	a.answer(w, c, t, syncTimeout(c.fn))
}

// job calls a FUNCTION with {"args": […], "kwargs": {…}}: 202 at once,
// or its answer when it ends within ?wait=SECONDS.
func (a *API) job(w http.ResponseWriter, r *http.Request, c call) {
	if r.Method != http.MethodPost {
		a.methodNotAllowed(w, r, c, http.MethodPost)
		return
	}
	wait, err := waitParam(r)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	t, ok := a.store(w, r, c, checkArgs, r.Header.Get("Idempotency-Key"))
	if !ok {
		return
	}
	a.answer(w, c, t, wait)
}

// queue puts the body (a JSON item) on a TASK_QUEUE: 202, or 200 when the
// Idempotency-Key named an earlier item.
func (a *API) queue(w http.ResponseWriter, r *http.Request, c call) {
	if r.Method != http.MethodPost {
		a.methodNotAllowed(w, r, c, http.MethodPost)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if len(key) > MaxIdempotencyKey {
		a.fail(w, fault.Invalid("Idempotency-Key", "at most %d characters", MaxIdempotencyKey), "")
		return
	}
	p, ok := a.request(w, r, c, checkItem)
	if !ok {
		return
	}
	t, created, err := a.cfg.Functions.Put(c.ctx, c.fn.ID, p, functions.CallOptions{Source: task.SourceHTTP, IdempotencyKey: key, Anonymous: !c.private})
	if err != nil {
		a.fail(w, err, "")
		return
	}
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	pending(w, t, status)
}

// realtime relays a WebSocket to a ready container of a REALTIME function
// (started when none runs), its prefix cut off.
func (a *API) realtime(w http.ResponseWriter, r *http.Request, c call) {
	if !isWebSocket(r) {
		a.fail(w, fault.New(fault.BadUserInput, "%s is a WebSocket endpoint: connect with a WebSocket handshake", c.route.Prefix()), "")
		return
	}
	if a.cfg.Relay == nil {
		a.fail(w, fault.New(fault.Unavailable, "this server relays no WebSockets"), "")
		return
	}
	jobID, err := a.cfg.Functions.RealtimeContainer(c.ctx, c.fn, syncTimeout(c.fn))
	if err != nil {
		a.fail(w, err, "")
		return
	}
	a.cfg.Relay.Direct(w, r.WithContext(c.ctx), relay.Dest{Job: jobID, Service: functions.RunnerService, Port: functions.RealtimePort, Prefix: c.route.Prefix()})
}

// store reads the body (check, when set, validating it), and stores the
// request as an HTTP-made call; ok is false when it answered.
func (a *API) store(w http.ResponseWriter, r *http.Request, c call, check func([]byte) error, key string) (*ent.Task, bool) {
	// The key is checked before the body is read and perhaps stored as a
	// blob for a call that is refused anyway.
	if len(key) > MaxIdempotencyKey {
		a.fail(w, fault.Invalid("Idempotency-Key", "at most %d characters", MaxIdempotencyKey), "")
		return nil, false
	}
	p, ok := a.request(w, r, c, check)
	if !ok {
		return nil, false
	}
	t, err := a.cfg.Functions.CallWith(c.ctx, c.fn.ID, p, functions.CallOptions{Source: task.SourceHTTP, IdempotencyKey: key, Anonymous: !c.private})
	if err != nil {
		a.fail(w, err, "")
		return nil, false
	}
	return t, true
}

// request is r as a task's arguments: its envelope, inline or a blob.
func (a *API) request(w http.ResponseWriter, r *http.Request, c call, check func([]byte) error) (functions.Payload, bool) {
	body, err := readBody(r)
	if err == nil && check != nil {
		err = check(body)
	}
	var env []byte
	if err == nil {
		env, err = envelope(r, c.route.Prefix(), c.route.Rest, body)
	}
	var p functions.Payload
	if err == nil {
		p, err = a.payload(c.ctx, env)
	}
	if errors.Is(err, errTooLarge) {
		a.refuse(w, http.StatusRequestEntityTooLarge, apiError{Code: string(fault.BadUserInput), Message: errTooLarge.Error()})
		return p, false
	}
	if err != nil {
		a.fail(w, err, "")
		return p, false
	}
	return p, true
}

// checkArgs accepts an empty body or {"args": [...], "kwargs": {...}}.
func checkArgs(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var v struct {
		Args   []json.RawMessage          `json:"args"`
		Kwargs map[string]json.RawMessage `json:"kwargs"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return fault.Invalid("body", `send {"args": [...], "kwargs": {...}} as JSON (%v)`, err)
	}
	return nil
}

// checkItem accepts a JSON value.
func checkItem(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 || !json.Valid(b) {
		return fault.Invalid("body", "send the item as JSON")
	}
	return nil
}

func (a *API) methodNotAllowed(w http.ResponseWriter, r *http.Request, c call, allow string) {
	w.Header().Set("Allow", allow)
	a.refuse(w, http.StatusMethodNotAllowed, apiError{Code: string(fault.BadUserInput),
		Message: fmt.Sprintf("%s takes %s requests, not %.20s", c.route.Prefix(), allow, r.Method)})
}

func syncTimeout(f *ent.Function) time.Duration {
	if f.SyncTimeoutSeconds > 0 {
		return time.Duration(f.SyncTimeoutSeconds) * time.Second
	}
	return DefaultSyncTimeout
}

// isWebSocket reports whether r asks for a WebSocket.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && headerHasToken(r.Header.Values("Connection"), "upgrade")
}

func headerHasToken(vs []string, token string) bool {
	for _, v := range vs {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

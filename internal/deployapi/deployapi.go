// Package deployapi is the HTTP front door of deployments: the URLs of
// deployed functions, endpoints and task queues (their grammar is
// functions.ParseRoute's), and the task URLs long calls answer with.
//
//	ANY  /endpoint/NAME[/vN|/APP_ID]/REST   an ENDPOINT or ASGI call, or a REALTIME WebSocket
//	POST /job/NAME[/vN|/APP_ID]             a FUNCTION call: {"args":[…],"kwargs":{…}} (202, or ?wait=S)
//	POST /queue/NAME[/vN|/APP_ID]           a TASK_QUEUE item (Idempotency-Key)
//	ANY  /box/NAME[/vN|/APP_ID]/PORT/REST   a BOX's port (HTTP or WebSocket, relayed)
//	ANY  /pub/TENANT/ENV/GROUP/NAME/…       the same for public deployments, without a token
//	GET  /api/tasks/ID[?wait=S]             a task's outcome (202 while it runs)
//
// /function, /taskqueue and /pod are the older names of /job, /queue and
// /box. Every rule (who reaches what, versions, idempotency) is
// internal/functions'; this package turns requests into the JSON
// envelopes an HTTP-made task carries and the tasks' outcomes into
// answers.
package deployapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/viewer"
)

// Relay relays a request to a job's port (*relay.Handler).
type Relay interface {
	Direct(w http.ResponseWriter, r *http.Request, d relay.Dest)
}

// Config is what the API needs.
type Config struct {
	Functions *functions.Service
	Auth      *auth.Service
	// Relay carries REALTIME WebSockets and boxes' requests to their
	// containers; nil refuses them.
	Relay Relay
	// Blobs holds request envelopes over the inline limit and large
	// results; nil refuses both.
	Blobs *blobs.Store
	Log   *slog.Logger
	// MaxAnonymousRequests bounds the requests without a token in flight
	// to one public deployment (DefaultMaxAnonymousRequests when 0).
	MaxAnonymousRequests int
}

// API serves deployments' URLs.
type API struct {
	cfg       Config
	anonymous inflight
}

// New returns the API of cfg.
func New(cfg Config) *API {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxAnonymousRequests <= 0 {
		cfg.MaxAnonymousRequests = DefaultMaxAnonymousRequests
	}
	return &API{cfg: cfg, anonymous: inflight{max: cfg.MaxAnonymousRequests}}
}

// Groups are the first path segments of deployment URLs, aliases and the
// public form included.
var Groups = []string{"job", "function", "endpoint", "queue", "taskqueue", "box", "pod", functions.PublicPrefix}

// Routes adds the deployment URLs and the task URLs to mux.
func (a *API) Routes(mux *http.ServeMux) {
	for _, g := range Groups {
		mux.Handle("/"+g+"/", a)
	}
	mux.HandleFunc("GET /api/tasks/{id}", a.task)
}

// TaskHeader names the task behind every answer about one.
const TaskHeader = "Levers9-Task"

// MaxBody is the largest request body a deployment takes (413 above).
const MaxBody = 1 << 20

// caller is the viewer of the request's API token: nil without one (an
// error for a bad one).
func (a *API) caller(r *http.Request) (*viewer.Viewer, error) {
	return a.cfg.Auth.FromRequest(r)
}

// signedIn puts the token's viewer in ctx; anonymous callers are refused.
func (a *API) signedIn(r *http.Request) (context.Context, error) {
	v, err := a.caller(r)
	if err == nil && v == nil {
		err = fault.New(fault.Unauthenticated, "sign in first: send an API token as Authorization: Bearer TOKEN (or make the deployment public and call its /pub/… URL)")
	}
	if err != nil {
		return nil, err
	}
	return viewer.NewContext(r.Context(), v), nil
}

// apiError is the body of every refusal.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Task    string `json:"task,omitempty"`
}

// fail answers err with its fault's code and status (a database outage
// 503 UNAVAILABLE with Retry-After; another unclassified error is logged
// and answered 500 INTERNAL), naming task when there is one.
func (a *API) fail(w http.ResponseWriter, err error, task string) {
	e, status := apiError{Code: string(fault.Internal), Message: "internal error", Task: task}, http.StatusInternalServerError
	if fs := fault.Classify(err); len(fs) > 0 {
		e.Code, e.Message, status = string(fs[0].Code), fs[0].Error(), fault.HTTPStatus(fs[0].Code)
	} else if o := fault.Outage(err); o != nil {
		e.Code, e.Message, status = string(o.Code), o.Error(), fault.HTTPStatus(o.Code)
		fault.SetRetryAfter(w.Header(), o)
		a.cfg.Log.Warn("deployments API: database unreachable", "task", task, "err", err)
	} else {
		a.cfg.Log.Error("deployments API", "task", task, "err", err)
	}
	a.refuse(w, status, e)
}

// refuse writes e as {"error": e} with status.
func (a *API) refuse(w http.ResponseWriter, status int, e apiError) {
	if e.Task != "" {
		w.Header().Set(TaskHeader, e.Task)
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

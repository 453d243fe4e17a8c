// Package blobsapi is the HTTP front door to blobs: the SDK uploads code
// packages and large payloads by their SHA-256 with an API token, and a
// node fetches the code of a function container it runs with its node
// credential.
//
//	PUT  /api/blobs/SHA256?kind=code|payload   upload (201 created, 200 had it)
//	HEAD /api/blobs/SHA256                     200 or 404
//	GET  /api/blobs/SHA256                     download
//	GET  /agent/code/SHA256                    a node's job's code (Levers9-Job header)
package blobsapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Config is what the API needs.
type Config struct {
	Blobs *blobs.Store
	Auth  *auth.Service
	Log   *slog.Logger
}

// API serves blobs.
type API struct{ cfg Config }

// New returns the API of cfg.
func New(cfg Config) *API {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &API{cfg: cfg}
}

// SDKHandler serves /api/blobs/, authenticated with API tokens.
func (a *API) SDKHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /api/blobs/{hash}", a.put)
	mux.HandleFunc("HEAD /api/blobs/{hash}", a.head)
	mux.HandleFunc("GET /api/blobs/{hash}", a.get)
	mux.HandleFunc("/", a.notFound)
	return a.authenticate(mux)
}

// authenticate puts the token's viewer in the request before routing, so
// that without a valid token every path answers 401 alike.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := a.cfg.Auth.FromRequest(r)
		if err == nil && v == nil {
			err = fault.New(fault.Unauthenticated, "sign in first: send an API token as Authorization: Bearer TOKEN")
		}
		if err != nil {
			a.fail(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(viewer.NewContext(r.Context(), v)))
	})
}

func (a *API) put(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("kind")
	if kind == blobs.KindImage {
		// Exported images come from nodes only (/agent/images), each
		// checked against the build or snapshot it belongs to.
		a.fail(w, fault.Invalid("kind", "images are uploaded by nodes, not by clients: upload %q or %q blobs", blobs.KindCode, blobs.KindPayload))
		return
	}
	created, err := a.cfg.Blobs.Put(r.Context(), kind, r.PathValue("hash"), r.Body, r.ContentLength)
	if err != nil {
		a.fail(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"hash": r.PathValue("hash"), "created": created})
}

func (a *API) head(w http.ResponseWriter, r *http.Request) {
	b, err := a.cfg.Blobs.Lookup(r.Context(), r.PathValue("hash"))
	if err != nil {
		a.fail(w, err)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(b.Size, 10))
	w.Header().Set("Content-Type", "application/octet-stream")
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	rc, size, err := a.cfg.Blobs.Open(r.Context(), r.PathValue("hash"))
	if err != nil {
		a.fail(w, err)
		return
	}
	defer rc.Close()
	a.serve(w, r, rc, size)
}

// serve streams a blob; its content never changes under its name.
func (a *API) serve(w http.ResponseWriter, r *http.Request, rc io.Reader, size int64) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	if _, err := io.Copy(w, rc); err != nil {
		a.cfg.Log.Warn("blob download interrupted", "hash", r.PathValue("hash"), "err", err)
	}
}

func (a *API) notFound(w http.ResponseWriter, _ *http.Request) {
	a.fail(w, fault.New(fault.NotFound, "no such route: blobs are at /api/blobs/SHA256"))
}

// fail answers with the error's code, as {"error": {"code", "message"}};
// a blob over its limit is 413.
func (a *API) fail(w http.ResponseWriter, err error) {
	fault.WriteJSON(w, a.cfg.Log, "blobs API", err)
}

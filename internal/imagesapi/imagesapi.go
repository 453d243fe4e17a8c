// Package imagesapi serves nodes the exported images of blueprints:
// the node that built one uploads it (POST /agent/images/KEY), a node that
// needs one for a job placed on it downloads it (GET). Both authenticate
// with the node credential and name the job in the Levers9-Job header;
// every refusal but a bad credential is the same 404.
package imagesapi

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/wire"
)

// Sha256Header carries the hex SHA-256 of an uploaded image.
const Sha256Header = "Levers9-Sha256"

// API is the node endpoints of blueprint images.
type API struct {
	Blueprints *blueprints.Service
	Log        *slog.Logger
}

// Handler serves /agent/images/.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/images/{key}", a.upload)
	mux.HandleFunc("GET /agent/images/{key}", a.download)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		a.fail(w, fault.New(fault.NotFound, "no such route: images are at /agent/images/KEY"))
	})
	return mux
}

func credential(r *http.Request) (string, error) {
	secret, ok := auth.ParseBearer(r.Header.Get("Authorization"))
	if !ok {
		return "", fault.New(fault.Unauthenticated, "send the node credential as Authorization: Bearer CREDENTIAL")
	}
	return secret, nil
}

func (a *API) upload(w http.ResponseWriter, r *http.Request) {
	cred, err := credential(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	steps := 0
	if h := r.Header.Get(wire.StepsBuiltHeader); h != "" {
		if steps, err = strconv.Atoi(h); err != nil {
			a.fail(w, fault.Invalid(wire.StepsBuiltHeader, "a number of steps"))
			return
		}
	}
	err = a.Blueprints.StoreImage(r.Context(), cred, r.Header.Get(wire.JobHeader), r.PathValue("key"), steps,
		r.Body, r.ContentLength, r.Header.Get(Sha256Header))
	if err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) download(w http.ResponseWriter, r *http.Request) {
	cred, err := credential(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	rc, size, err := a.Blueprints.OpenImage(r.Context(), cred, r.Header.Get(wire.JobHeader), r.PathValue("key"))
	if err != nil {
		a.fail(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	if _, err := io.Copy(w, rc); err != nil {
		a.Log.Warn("image download interrupted", "key", r.PathValue("key"), "err", err)
	}
}

// fail answers with the error's code, as {"error": {"code", "message"}},
// like the blob API; an image over the limit is 413.
func (a *API) fail(w http.ResponseWriter, err error) {
	fault.WriteJSON(w, a.Log, "images API", err)
}

// Package filesapi is the HTTP front door to bucket files: streamed
// uploads and downloads (any size, never held in memory), listing and
// delete, authenticated with the same API tokens as GraphQL.
//
//	GET    /files/BUCKET/?prefix=P&after=K&limit=N   list (JSON)
//	GET    /files/BUCKET/KEY                         download
//	HEAD   /files/BUCKET/KEY                         size and time
//	PUT    /files/BUCKET/KEY                         upload (body = content)
//	DELETE /files/BUCKET/KEY                         delete
package filesapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/mounts"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// DefaultMaxUpload bounds one upload unless configured otherwise.
const DefaultMaxUpload = 64 << 30 // 64 GiB

// API serves the files of buckets.
type API struct {
	Files     *buckets.Files
	Auth      *auth.Service
	Log       *slog.Logger
	MaxUpload int64
	// Mounts, when set, lets nodes sync the mounts of their jobs.
	Mounts *mounts.Planner
}

// Handler returns the routes under /files/.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /files/{bucket}/{key...}", a.get)
	mux.HandleFunc("HEAD /files/{bucket}/{key...}", a.head)
	mux.HandleFunc("PUT /files/{bucket}/{key...}", a.put)
	mux.HandleFunc("DELETE /files/{bucket}/{key...}", a.delete)
	return a.guard(mux)
}

// guard refuses traversal in any spelling before routing (the router would
// otherwise clean "a/../b" into another path), then authenticates.
func (a *API) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := strings.ToLower(r.URL.EscapedPath())
		for _, bad := range []string{"%2e", "%2f", "%5c", "%00", "/../", "/./", "//", "\\"} {
			if strings.Contains(raw, bad) {
				a.fail(w, fault.Invalid("key", "the path may not contain %q", bad))
				return
			}
		}
		if strings.HasSuffix(raw, "/..") || strings.HasSuffix(raw, "/.") {
			a.fail(w, fault.Invalid("key", "the path may not end in a relative segment"))
			return
		}
		v, err := a.viewer(r)
		if err != nil {
			a.fail(w, err)
			return
		}
		if v == nil {
			a.fail(w, fault.New(fault.Unauthenticated, "sign in first: send an API token as Authorization: Bearer TOKEN"))
			return
		}
		next.ServeHTTP(w, r.WithContext(viewer.NewContext(r.Context(), v)))
	})
}

// viewer is who r acts as: a user or superadmin by API token, or, with the
// job header, a node syncing a job's mounts (acting as the job's owner).
func (a *API) viewer(r *http.Request) (*viewer.Viewer, error) {
	jobID := r.Header.Get(wire.JobHeader)
	if jobID == "" || a.Mounts == nil {
		return a.Auth.FromRequest(r)
	}
	secret, ok := auth.ParseBearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, fault.New(fault.Unauthenticated, "send the node credential as Authorization: Bearer CREDENTIAL")
	}
	bucketID, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/files/"), "/")
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	return a.Mounts.ForJob(r.Context(), secret, jobID, bucketID, write)
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if key == "" {
		a.list(w, r)
		return
	}
	rc, obj, err := a.Files.Download(r.Context(), r.PathValue("bucket"), key)
	if err != nil {
		a.fail(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	w.Header().Set("Last-Modified", obj.Modified.UTC().Format(http.TimeFormat))
	n, err := io.Copy(w, rc)
	metrics.FilesBytes.WithLabelValues("out").Add(float64(n))
	if err != nil {
		a.Log.Warn("download interrupted", "bucket", r.PathValue("bucket"), "key", key, "err", err)
	}
}

func (a *API) head(w http.ResponseWriter, r *http.Request) {
	rc, obj, err := a.Files.Download(r.Context(), r.PathValue("bucket"), r.PathValue("key"))
	if err != nil {
		a.fail(w, err)
		return
	}
	rc.Close()
	w.Header().Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	w.Header().Set("Last-Modified", obj.Modified.UTC().Format(http.TimeFormat))
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var asked *int
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			n = -1 // not a number: refused as out of range
		}
		asked = &n
	}
	limit, err := buckets.PageSize("limit", asked)
	if err != nil {
		a.fail(w, err)
		return
	}
	opts := buckets.ListOptions{Prefix: q.Get("prefix"), After: q.Get("after"), Limit: limit}
	page, err := a.Files.List(r.Context(), r.PathValue("bucket"), opts)
	if err != nil {
		a.fail(w, err)
		return
	}
	out := wire.FileListing{Objects: make([]wire.FileObject, len(page.Objects)), Next: page.Next}
	for i, o := range page.Objects {
		out.Objects[i] = wire.FileObject{Key: o.Key, Size: o.Size, Modified: o.Modified}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (a *API) put(w http.ResponseWriter, r *http.Request) {
	maxUpload := a.MaxUpload
	if maxUpload <= 0 {
		maxUpload = DefaultMaxUpload
	}
	if r.ContentLength > maxUpload {
		a.fail(w, fault.Invalid("body", "uploads are limited to %d bytes", maxUpload))
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxUpload)
	obj, err := a.Files.Upload(r.Context(), r.PathValue("bucket"), r.PathValue("key"), body, r.ContentLength)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			err = fault.Invalid("body", "uploads are limited to %d bytes", maxUpload)
		}
		a.fail(w, err)
		return
	}
	metrics.FilesBytes.WithLabelValues("in").Add(float64(obj.Size))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(wire.FileObject{Key: obj.Key, Size: obj.Size, Modified: obj.Modified})
}

func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	if err := a.Files.Delete(r.Context(), r.PathValue("bucket"), r.PathValue("key")); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// fail answers with the error's code, as {"error": {"code", "message"}}.
func (a *API) fail(w http.ResponseWriter, err error) {
	fault.WriteJSON(w, a.Log, "files API", err)
}

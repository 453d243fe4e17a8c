// Package files is the Files page: every bucket the viewer may read, its
// objects browsed by prefix, and upload, download and delete through
// buckets.Files, the same functions (and access rules) as the files API.
package files

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/app"
)

// Register adds the Files routes. They live under /buckets: /files/ is the
// files API's.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Files", "/buckets", app.Member)
	rt.Handle("GET /buckets", app.Member, h.buckets)
	rt.Handle("GET /buckets/{bucket}", app.Member, h.browse)
	rt.Handle("GET /buckets/{bucket}/download", app.Member, h.download)
	rt.Handle("POST /buckets/{bucket}/upload", app.Member, h.upload)
	rt.Handle("POST /buckets/{bucket}/delete", app.Member, h.remove)
}

type handlers struct{ rt *app.Router }

// bucketRow is a readable bucket.
type bucketRow struct {
	Name, Storage string
	SizeBytes     int64
	Writable      bool
}

func (h *handlers) buckets(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	// Two queries however many buckets there are: the readable ones and,
	// of those, the writable ones.
	readable, err := access.ReadableBuckets(ctx, c.Bucket.Query()).WithStorage().Order(ent.Asc(bucket.FieldName)).All(ctx)
	if err != nil {
		return err
	}
	writable, err := access.WritableBuckets(ctx, c.Bucket.Query()).IDs(ctx)
	if err != nil {
		return err
	}
	rows := make([]bucketRow, len(readable))
	for i, b := range readable {
		rows[i] = bucketRow{Name: b.Name, SizeBytes: b.SizeBytes, Writable: slices.Contains(writable, b.ID)}
		if b.Edges.Storage != nil {
			rows[i].Storage = b.Edges.Storage.Name
		}
	}
	// Only admins create buckets (ent policy): others are told who does.
	return app.Render(w, r, http.StatusOK, bucketsView(h.rt.Frame(r, "Files"), rows, app.Viewer(r).Admin))
}

// browsePage is one prefix of a bucket: its "folders" (the next path
// segments) and objects.
type browsePage struct {
	Bucket   string // its name
	Writable bool
	Prefix   string
	Crumbs   []crumb
	Folders  []string
	Objects  []buckets.Object
	Next     string // URL of the next page, or ""
	Upload   string // the upload form's action (with its CSRF token)
}

type crumb struct{ Label, Prefix string }

func (h *handlers) browse(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	ref := r.PathValue("bucket")
	b, err := c.Bucket.Query().Where(bucket.Name(ref)).Only(ctx)
	if err != nil {
		return err
	}
	prefix, after := r.URL.Query().Get("prefix"), r.URL.Query().Get("after")
	listing, err := h.rt.Deps.Files.List(ctx, b.ID, buckets.ListOptions{Prefix: prefix, After: after})
	if err != nil {
		return err
	}
	wr, err := access.CanWriteBucket(ctx, c, b.ID)
	if err != nil {
		return err
	}
	p := browsePage{Bucket: b.Name, Writable: wr, Prefix: prefix, Crumbs: crumbs(prefix)}
	folders := map[string]bool{}
	for _, o := range listing.Objects {
		rest := strings.TrimPrefix(o.Key, prefix)
		if i := strings.Index(rest, "/"); i >= 0 {
			folders[prefix+rest[:i+1]] = true
			continue
		}
		p.Objects = append(p.Objects, o)
	}
	for f := range folders {
		p.Folders = append(p.Folders, f)
	}
	sort.Strings(p.Folders)
	if listing.Next != "" {
		p.Next = browseURL(b.Name, prefix) + "&after=" + url.QueryEscape(listing.Next)
	}
	p.Upload = "/buckets/" + url.PathEscape(b.Name) + "/upload?" + url.Values{app.CSRFField: {h.rt.CSRFToken(r)}}.Encode()
	return app.Render(w, r, http.StatusOK, browseView(h.rt.Frame(r, "Files · "+b.Name), p))
}

func browseURL(bucketName, prefix string) string {
	return "/buckets/" + url.PathEscape(bucketName) + "?prefix=" + url.QueryEscape(prefix)
}

// crumbs are the links to each parent prefix of prefix.
func crumbs(prefix string) []crumb {
	out := []crumb{{Label: "top", Prefix: ""}}
	acc := ""
	for _, seg := range strings.SplitAfter(prefix, "/") {
		if seg == "" {
			continue
		}
		acc += seg
		out = append(out, crumb{Label: strings.TrimSuffix(seg, "/"), Prefix: acc})
	}
	return out
}

func (h *handlers) download(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	b, err := h.rt.Deps.DB.Ent.Bucket.Query().Where(bucket.Name(r.PathValue("bucket"))).Only(ctx)
	if err != nil {
		return err
	}
	key := r.URL.Query().Get("key")
	rc, obj, err := h.rt.Deps.Files.Download(ctx, b.ID, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(key)}))
	w.Header().Set("Cache-Control", "no-store")
	if _, err := io.Copy(w, rc); err != nil {
		h.rt.Deps.Log.Debug("download interrupted", "bucket", b.Name, "key", key, "err", err)
	}
	return nil
}

// upload streams each file of a multipart form into the bucket, under the
// form's prefix, without holding it in memory or on disk: the parts are
// read in order, so the prefix field comes before the files.
func (h *handlers) upload(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	b, err := h.rt.Deps.DB.Ent.Bucket.Query().Where(bucket.Name(r.PathValue("bucket"))).Only(ctx)
	if err != nil {
		return err
	}
	limit := h.rt.Deps.MaxUpload
	if r.ContentLength > limit+1<<20 {
		return fault.Invalid("file", "uploads are limited to %d bytes", limit)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit+1<<20) // the file plus the form around it
	mr, err := r.MultipartReader()
	if err != nil {
		return fault.Invalid("file", "send the file as a multipart form")
	}
	prefix, n := "", 0
	var names []string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return uploadFault(err, limit)
		}
		switch part.FormName() {
		case "prefix":
			v, err := io.ReadAll(io.LimitReader(part, 4096))
			if err != nil {
				return uploadFault(err, limit)
			}
			prefix = string(v)
		case "file":
			if part.FileName() == "" {
				continue
			}
			key := prefix + path.Base(part.FileName())
			// Each file is held to the limit as it streams: a reader error
			// makes the storage drop the object instead of storing part of it.
			body := &capped{r: part, left: limit}
			if _, err := h.rt.Deps.Files.Upload(ctx, b.ID, key, body, -1); err != nil {
				if body.over {
					return fault.Invalid("file", "%s is larger than the %d bytes an upload may have", part.FileName(), limit)
				}
				return uploadFault(err, limit)
			}
			n++
			names = append(names, key)
		}
		part.Close()
	}
	if n == 0 {
		return fault.Invalid("file", "choose a file to upload")
	}
	h.rt.Flash(r, fmt.Sprintf("Uploaded %s.", strings.Join(names, ", ")))
	return app.SeeOther(w, r, browseURL(b.Name, prefix))
}

func uploadFault(err error, limit int64) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fault.Invalid("file", "uploads are limited to %d bytes", limit)
	}
	return err
}

func (h *handlers) remove(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	b, err := h.rt.Deps.DB.Ent.Bucket.Query().Where(bucket.Name(r.PathValue("bucket"))).Only(ctx)
	if err != nil {
		return err
	}
	key := r.PostFormValue("key")
	if err := h.rt.Deps.Files.Delete(ctx, b.ID, key); err != nil {
		return err
	}
	h.rt.Flash(r, "Deleted "+key+".")
	return app.SeeOther(w, r, browseURL(b.Name, key[:strings.LastIndex(key, "/")+1]))
}

// capped reads r and fails once more than left bytes came.
type capped struct {
	r    io.Reader
	left int64
	over bool
}

var errTooLarge = errors.New("upload larger than the limit")

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		c.over = true
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return 0, errTooLarge
	}
	return n, err
}

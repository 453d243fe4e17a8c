package storages

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
)

// bucketPage changes who may read and write a bucket and who pays for it;
// its name and storage are fixed.
type bucketPage struct {
	ID, Name, Storage string
	Form              *adminkit.Form
	page
}

func (h *handlers) loadBucket(r *http.Request) (*ent.Bucket, error) {
	return h.rt.Deps.DB.Ent.Bucket.Query().Where(bucket.ID(r.PathValue("id"))).
		WithStorage().WithReadGroups().WithWriteGroups().Only(r.Context())
}

func (h *handlers) showBucket(w http.ResponseWriter, r *http.Request) error {
	b, err := h.loadBucket(r)
	if err != nil {
		return err
	}
	v := url.Values{"project": {b.ProjectID}, "readGroups": groupIDs(b.Edges.ReadGroups), "writeGroups": groupIDs(b.Edges.WriteGroups)}
	return h.renderBucket(w, r, http.StatusOK, b, adminkit.NewForm("bucket", h.rt.CSRFToken(r), v))
}

func (h *handlers) renderBucket(w http.ResponseWriter, r *http.Request, status int, b *ent.Bucket, f *adminkit.Form) error {
	p := bucketPage{ID: b.ID, Name: b.Name, Storage: storageName(b), Form: f}
	if err := h.options(r, &p.page); err != nil {
		return err
	}
	return app.Render(w, r, status, bucketView(h.rt.Frame(r, "Bucket "+b.Name), p))
}

func (h *handlers) updateBucket(w http.ResponseWriter, r *http.Request) error {
	b, err := h.loadBucket(r)
	if err != nil {
		return err
	}
	f, err := adminkit.Posted(r, "bucket", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	in := ent.UpdateBucketInput{}
	in.AddReadGroupIDs, in.RemoveReadGroupIDs = diff(groupIDs(b.Edges.ReadGroups), f.All("readGroups"))
	in.AddWriteGroupIDs, in.RemoveWriteGroupIDs = diff(groupIDs(b.Edges.WriteGroups), f.All("writeGroups"))
	if p := f.Get("project"); p == "" {
		in.ClearProject = true
	} else if p != b.ProjectID {
		in.ProjectID = &p
	}
	if _, err := h.rt.Deps.DB.Ent.Bucket.UpdateOneID(b.ID).SetInput(in).Save(r.Context()); err != nil {
		// An ID the admin cannot see (another tenant's group or project)
		// fails the edge checks: a problem of the form, not of the server.
		if err := f.Absorb(err, "", bucketFields); err != nil {
			return err
		}
		return h.renderBucket(w, r, http.StatusBadRequest, b, f)
	}
	h.rt.Flash(r, "Bucket "+b.Name+" saved.")
	return app.SeeOther(w, r, "/admin/storages")
}

func groupIDs(gs []*ent.Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.ID
	}
	return out
}

// diff returns what to add to have and what to remove from it to get want.
func diff(have, want []string) (add, remove []string) {
	for _, w := range want {
		if !slices.Contains(have, w) {
			add = append(add, w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			remove = append(remove, h)
		}
	}
	return add, remove
}

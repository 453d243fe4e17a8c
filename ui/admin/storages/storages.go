// Package storages is the admin page of storages (S3, a directory on a
// node, or the server's disk: buckets.Storages, as the createStorage
// mutation) and of the buckets on them with the groups that may read and
// write them.
package storages

import (
	"fmt"
	"net/http"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the storage and bucket pages, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/storages", app.Admin, h.list)
	rt.Handle("POST /admin/storages", app.Admin, h.createStorage)
	rt.Handle("POST /admin/storages/reach", app.Admin, h.previewStorage)
	rt.Handle("POST /admin/buckets", app.Admin, h.createBucket)
	rt.Handle("POST /admin/buckets/reach", app.Admin, h.previewBucket)
	rt.Handle("GET /admin/buckets/{id}", app.Admin, h.showBucket)
	rt.Handle("POST /admin/buckets/{id}", app.Admin, h.updateBucket)
}

type handlers struct{ rt *app.Router }

// storageFields maps the domain's and ent's field names to the form's.
var storageFields = map[string]string{
	"name": "name", "kind": "kind", "endpoint": "endpoint", "region": "region",
	"s3Bucket": "s3Bucket", "s3_bucket": "s3Bucket", "nodeID": "nodeID", "node_id": "nodeID",
	"path": "path", "pricePerTbHour": "pricePerTbHour", "price_per_tb_hour": "pricePerTbHour",
}

var bucketFields = map[string]string{
	"name": "name", "storage_id": "storage", "project_id": "project",
}

var kinds = []components.Option{
	{Value: string(storage.KindS3), Label: "S3 (an endpoint and bucket)"},
	{Value: string(storage.KindNode), Label: "a directory on a node"},
	{Value: string(storage.KindLocal), Label: "the server's own disk"},
}

type page struct {
	Storages []storageRow
	Buckets  []bucketRow
	Storage  *adminkit.Form
	Bucket   *adminkit.Form
	// Options of the forms' selects and checkboxes.
	Nodes, StorageOpts, Projects, Groups, Queues []components.Option
	// StorageReach and BucketReach, when set, are who could mount the
	// buckets of the storage or bucket the form describes (reach.go).
	StorageReach, BucketReach *reachView
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	csrf := h.rt.CSRFToken(r)
	sf := adminkit.NewForm("storage", csrf, nil)
	sf.Values.Set("kind", string(storage.KindS3))
	sf.Values.Set("pricePerTbHour", "0")
	return h.render(w, r, http.StatusOK, sf, adminkit.NewForm("bucket", csrf, nil))
}

func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, sf, bf *adminkit.Form) error {
	return h.renderPage(w, r, status, page{Storage: sf, Bucket: bf})
}

// renderPage shows page p, its forms set, with the lists and options.
func (h *handlers) renderPage(w http.ResponseWriter, r *http.Request, status int, p page) error {
	sf := p.Storage
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	ss, err := c.Storage.Query().WithNode().WithBuckets().Order(ent.Asc(storage.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing storages: %w", err)
	}
	for _, s := range ss {
		p.Storages = append(p.Storages, describeStorage(ctx, s))
	}
	bs, err := c.Bucket.Query().WithStorage().WithProject().WithReadGroups().WithWriteGroups().
		Order(ent.Asc(bucket.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing buckets: %w", err)
	}
	for _, b := range bs {
		p.Buckets = append(p.Buckets, describeBucket(b))
	}
	if err := h.options(r, &p); err != nil {
		return err
	}
	sf.Values.Del("secretAccessKey") // never sent back
	return app.Render(w, r, status, view(h.rt.Frame(r, "Storages and buckets"), p))
}

// options fills in what the forms' selects and checkboxes offer.
func (h *handlers) options(r *http.Request, p *page) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	ns, err := c.Node.Query().Order(ent.Asc(node.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	p.Nodes = []components.Option{{Value: "", Label: "— (S3 and local storages)"}}
	for _, n := range ns {
		p.Nodes = append(p.Nodes, components.Option{Value: n.ID, Label: n.Name})
	}
	for _, s := range p.Storages {
		p.StorageOpts = append(p.StorageOpts, components.Option{Value: s.ID, Label: s.Name})
	}
	ps, err := c.Project.Query().Order(ent.Asc(project.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing projects: %w", err)
	}
	p.Projects = []components.Option{{Value: "", Label: "none: its creator pays"}}
	for _, pr := range ps {
		p.Projects = append(p.Projects, components.Option{Value: pr.ID, Label: pr.Name})
	}
	gs, err := c.Group.Query().Order(ent.Asc(group.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	for _, g := range gs {
		p.Groups = append(p.Groups, components.Option{Value: g.ID, Label: g.Name})
	}
	qs, err := c.Queue.Query().Order(ent.Asc(queue.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing queues: %w", err)
	}
	for _, q := range qs {
		p.Queues = append(p.Queues, components.Option{Value: q.ID, Label: q.Name})
	}
	return nil
}

// optional is s, or nil when empty: the domain tells unset from set.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h *handlers) createStorage(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "storage", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	in := ent.CreateStorageInput{
		Name: f.Get("name"), Kind: storage.Kind(f.Get("kind")),
		Endpoint: optional(f.Get("endpoint")), Region: optional(f.Get("region")), S3Bucket: optional(f.Get("s3Bucket")),
		AccessKeyID: optional(f.Get("accessKeyID")), SecretAccessKey: optional(f.Values.Get("secretAccessKey")),
		Path: optional(f.Get("path")), NodeID: optional(f.Get("nodeID")), QueueIDs: f.All("queues"),
	}
	price, err := billing.ParseTokens(f.Get("pricePerTbHour"))
	if err != nil {
		f.Add("pricePerTbHour", err.Error())
	}
	in.PricePerTbHour = &price
	bf := adminkit.NewForm("bucket", f.CSRF, nil)
	if f.Invalid() {
		return h.render(w, r, http.StatusBadRequest, f, bf)
	}
	st := buckets.Storages{LocalRoot: h.rt.Deps.Tenancy.LocalStorageRoot, AllowPrivateS3: h.rt.Deps.Files.AllowPrivateS3}
	s, err := st.Create(r.Context(), h.rt.Deps.DB.Ent, in)
	if err != nil {
		if err := f.Absorb(err, "name", storageFields); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, f, bf)
	}
	h.rt.Flash(r, "Storage "+s.Name+" created.")
	return app.SeeOther(w, r, "/admin/storages")
}

func (h *handlers) createBucket(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "bucket", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	sf := adminkit.NewForm("storage", f.CSRF, nil)
	// The storage must be one the admin sees; its ID comes from the page.
	if _, err := c.Storage.Get(ctx, f.Get("storage")); err != nil {
		f.Add("storage", "choose one of this tenant's storages")
		return h.render(w, r, http.StatusBadRequest, sf, f)
	}
	b, err := c.Bucket.Create().SetInput(ent.CreateBucketInput{
		Name: f.Get("name"), StorageID: f.Get("storage"), ProjectID: optional(f.Get("project")),
		ReadGroupIDs: f.All("readGroups"), WriteGroupIDs: f.All("writeGroups"),
	}).Save(ctx)
	if err != nil {
		if err := f.Absorb(err, "name", bucketFields); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, sf, f)
	}
	h.rt.Flash(r, "Bucket "+b.Name+" created.")
	return app.SeeOther(w, r, "/admin/storages")
}

package storages

import (
	"net/http"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/ui/admin/adminkit"
)

// reachView is a storage's reach in words, shown before saving.
type reachView struct {
	// Subject names what the preview is of ("storage scratch", "bucket
	// datasets on storage s3-main").
	Subject string
	Queues  string // "" when none
	Nodes   string
	// None says why nothing reaches it and what to do.
	None string
}

// describeReach puts reach r in words.
func describeReach(subject string, st *ent.Storage, r buckets.Reach) *reachView {
	v := &reachView{Subject: subject, Queues: strings.Join(r.Queues, ", "), Nodes: strings.Join(r.Nodes, ", ")}
	switch {
	case len(r.Queues) > 0 && len(r.Nodes) == 0:
		v.Nodes = "none yet: no node serves these queues"
	case len(r.Queues) > 0:
	case st.Kind == storage.KindNode:
		v.None = "No queue holds its node: jobs cannot mount its buckets until a queue contains that node."
	default:
		v.None = "No queue lists it: jobs cannot mount its buckets until a queue does (tick queues above, or on the queue's page)."
	}
	return v
}

// previewStorage shows who could mount the buckets of the storage the
// form describes, writing nothing; the form keeps what was typed.
func (h *handlers) previewStorage(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "storage", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	st := &ent.Storage{Kind: storage.Kind(f.Get("kind")), NodeID: f.Get("nodeID")}
	if err := storage.KindValidator(st.Kind); err != nil {
		f.Add("kind", "choose S3, a directory on a node, or the server's disk")
		return h.render(w, r, http.StatusBadRequest, f, adminkit.NewForm("bucket", f.CSRF, nil))
	}
	p := page{Storage: f, Bucket: adminkit.NewForm("bucket", f.CSRF, nil)}
	if st.Kind == storage.KindNode {
		// The node must be one the admin sees; its ID comes from the page.
		if _, err := h.rt.Deps.DB.Ent.Node.Get(r.Context(), st.NodeID); err != nil {
			f.Add("nodeID", "choose one of this tenant's nodes")
			return h.renderPage(w, r, http.StatusBadRequest, p)
		}
	}
	reach, err := buckets.Preview(r.Context(), h.rt.Deps.DB.Ent, st, f.All("queues"))
	if err != nil {
		return err
	}
	p.StorageReach = describeReach("this storage", st, reach)
	return h.renderPage(w, r, http.StatusOK, p)
}

// previewBucket shows who could mount a bucket on the storage the form
// names, writing nothing.
func (h *handlers) previewBucket(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "bucket", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	ctx := r.Context()
	p := page{Storage: adminkit.NewForm("storage", f.CSRF, nil), Bucket: f}
	st, err := h.rt.Deps.DB.Ent.Storage.Get(ctx, f.Get("storage"))
	if err != nil {
		f.Add("storage", "choose one of this tenant's storages")
		return h.renderPage(w, r, http.StatusBadRequest, p)
	}
	listedBy, err := st.QueryQueues().IDs(ctx)
	if err != nil {
		return err
	}
	reach, err := buckets.Preview(ctx, h.rt.Deps.DB.Ent, st, listedBy)
	if err != nil {
		return err
	}
	p.BucketReach = describeReach("a bucket on storage "+st.Name, st, reach)
	return h.renderPage(w, r, http.StatusOK, p)
}

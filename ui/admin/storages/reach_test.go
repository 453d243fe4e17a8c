package storages_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/storages"
)

// TestReachShownBeforeSaving: the storage and bucket forms show which
// queues' jobs, on which nodes, could mount the buckets, without writing
// anything; the storage then saved with those queues reaches them. Other
// tenants' nodes and storages are refused, members may not ask.
func TestReachShownBeforeSaving(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, storages.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		def := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID), queue.Name("default")).OnlyX(sys)
		e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("gpu-1").AddQueues(def).SaveX(sys)
		lone := e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("lone").SaveX(sys)
		theirs := e.Ent.Node.Create().SetTenantID(b.Ent.ID).SetName("theirs").SaveX(sys)
		count := func() int { return e.Ent.Storage.Query().Where(storage.TenantID(a.Ent.ID)).CountX(sys) }
		before := count()
		admin := e.SignIn(a.Admin.Email)

		s3 := url.Values{"name": {"s3-main"}, "kind": {"S3"}, "endpoint": {"https://s3.example.com"}, "s3Bucket": {"x"},
			"accessKeyID": {"AK"}, "secretAccessKey": {"very-secret"}, "pricePerTbHour": {"0"}}
		admin.Post("/admin/storages/reach", s3).Want(t, http.StatusOK).
			Contains(t, `id="storage-reach"`, "No queue lists it", `value="s3-main"`).Lacks(t, "very-secret")
		s3.Set("queues", def.ID)
		admin.Post("/admin/storages/reach", s3).Want(t, http.StatusOK).
			Contains(t, `<dd class="reach-queues">default</dd>`, `<dd class="reach-nodes">gpu-1</dd>`)
		admin.Post("/admin/storages/reach", url.Values{"name": {"d"}, "kind": {"NODE"}, "nodeID": {lone.ID}, "path": {"/d"}}).
			Want(t, http.StatusOK).Contains(t, "No queue holds its node")
		admin.Post("/admin/storages/reach", url.Values{"name": {"d"}, "kind": {"NODE"}, "nodeID": {theirs.ID}, "path": {"/d"}}).
			Want(t, http.StatusBadRequest).Contains(t, "choose one of this tenant&#39;s nodes")
		if got := count(); got != before {
			t.Fatalf("previews stored %d storages", got-before)
		}

		admin.Post("/admin/storages", s3).Want(t, http.StatusOK).Contains(t, "Storage s3-main created.")
		st := e.Ent.Storage.Query().Where(storage.TenantID(a.Ent.ID), storage.Name("s3-main")).WithQueues().OnlyX(sys)
		if len(st.Edges.Queues) != 1 || st.Edges.Queues[0].ID != def.ID {
			t.Fatalf("the saved storage is listed by %v; want the default queue", st.Edges.Queues)
		}
		admin.Post("/admin/buckets/reach", url.Values{"name": {"datasets"}, "storage": {st.ID}}).Want(t, http.StatusOK).
			Contains(t, "Who can mount a bucket on storage s3-main", `<dd class="reach-nodes">gpu-1</dd>`, `value="datasets"`)
		otherStorage := e.Ent.Storage.Create().SetTenantID(b.Ent.ID).SetName("theirs").SetKind(storage.KindLocal).SaveX(sys)
		admin.Post("/admin/buckets/reach", url.Values{"name": {"x"}, "storage": {otherStorage.ID}}).Want(t, http.StatusBadRequest).
			Contains(t, "choose one of this tenant&#39;s storages")
		e.SignIn(a.Member.Email).Post("/admin/storages/reach", s3).Want(t, http.StatusForbidden)
	})
}

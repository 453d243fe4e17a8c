package queues_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/queues"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// form is a complete, valid queue form; tests change fields of a copy.
func form(name string, more url.Values) url.Values {
	v := url.Values{
		"name": {name}, "description": {"big GPUs"}, "mode": {"BATCH"},
		"maxGpus": {"4"}, "maxCpu": {"16"}, "maxMemoryMiB": {"65536"},
		"cpuPrice": {"0.01"}, "memoryPrice": {"0.002"}, "startFee": {"1.5"}, "multiplier": {"1.25"},
		"gpuPrices": {"A100 0.5\r\nT4 0.1"},
	}
	for k, vs := range more {
		v[k] = vs
	}
	return v
}

func TestCreateAndEdit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, queues.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		n := e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("gpu-1").SaveX(sys)
		everyone := e.Ent.Group.Query().Where(group.TenantID(a.Ent.ID), group.Name("everyone")).OnlyX(sys)
		admin := e.SignIn(a.Admin.Email)

		admin.Get("/admin/queues/new").Want(t, http.StatusOK).Contains(t, "gpu-1", "everyone", `name="nodes"`)
		admin.Get("/admin/queues/new").Want(t, http.StatusOK).Contains(t, `name="defaultCpu"`, `value="1024"`)
		res := admin.Post("/admin/queues", form("gpu", url.Values{"nodes": {n.ID}, "groups": {everyone.ID},
			"defaultCpu": {"2"}, "defaultMemoryMiB": {"2048"}})).Want(t, http.StatusOK)
		if res.URL != "/admin/queues" {
			t.Fatalf("ended at %s, want the list", res.URL)
		}
		res.Contains(t, "Queue gpu created.", "gpu", "A100 0.5/GPU-min", "T4 0.1/GPU-min", "start 1.5", "×1.25", "4 GPUs, 16 CPUs, 65536 MiB",
			"a service naming none gets 2 CPU, 2048 MiB")

		q := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID), queue.Name("gpu")).WithNodes().WithGroups().OnlyX(sys)
		want := []billing.GPURate{{Type: "A100", PerMinute: billing.Unit / 2}, {Type: "T4", PerMinute: billing.Unit / 10}}
		if len(q.GpuPrices) != 2 || q.GpuPrices[0] != want[0] || q.GpuPrices[1] != want[1] || q.StartFee != 3*billing.Unit/2 ||
			q.Mode != queue.ModeBatch || len(q.Edges.Nodes) != 1 || len(q.Edges.Groups) != 1 ||
			q.DefaultCPU != 2 || q.DefaultMemoryMib != 2048 {
			t.Fatalf("stored queue %+v with edges %+v", q, q.Edges)
		}

		// Editing shows the stored values and changes edges to the ticked boxes.
		admin.Get("/admin/queues/"+q.ID).Want(t, http.StatusOK).Contains(t, `value="gpu"`, "A100 0.5\nT4 0.1", `value="1.25"`, `value="2048"`)
		admin.Post("/admin/queues/"+q.ID, form("gpu-big", url.Values{"gpuPrices": {""}, "storages": nil})).
			Want(t, http.StatusOK).Contains(t, "Queue gpu-big saved.")
		q = e.Ent.Queue.Query().Where(queue.ID(q.ID)).WithNodes().WithGroups().OnlyX(sys)
		if q.Name != "gpu-big" || len(q.GpuPrices) != 0 || len(q.Edges.Nodes) != 0 || len(q.Edges.Groups) != 0 {
			t.Fatalf("edited queue %+v with edges %+v", q, q.Edges)
		}
	})
}

// The idle timeout is set in minutes, stored in seconds, shown on the list;
// left empty it keeps what is stored.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, queues.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)

		admin.Get("/admin/queues/new").Want(t, http.StatusOK).Contains(t, `name="idleTimeout"`)
		admin.Get("/admin/queues").Want(t, http.StatusOK).Contains(t, "Idle stop", "never")
		admin.Post("/admin/queues", form("notebooks", url.Values{"idleTimeout": {"30"}})).
			Want(t, http.StatusOK).Contains(t, "Queue notebooks created.", "after 30m")
		q := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID), queue.Name("notebooks")).OnlyX(sys)
		if q.IdleTimeoutSeconds != 1800 {
			t.Fatalf("stored idle timeout %ds; want 1800", q.IdleTimeoutSeconds)
		}
		admin.Get("/admin/queues/"+q.ID).Want(t, http.StatusOK).Contains(t, `value="30"`)
		for _, tc := range []struct {
			minutes string
			want    int
			shown   string
		}{
			{"", 1800, "after 30m"}, // left empty: kept
			{"1.5", 90, "after 1m30s"},
			{"1440", 24 * 3600, "after 1d"},
			{"0", 0, "never"},
		} {
			admin.Post("/admin/queues/"+q.ID, form("notebooks", url.Values{"idleTimeout": {tc.minutes}})).
				Want(t, http.StatusOK).Contains(t, "Queue notebooks saved.", tc.shown)
			if got := e.Ent.Queue.GetX(sys, q.ID).IdleTimeoutSeconds; got != tc.want {
				t.Fatalf("idle timeout %q minutes stored as %ds; want %d", tc.minutes, got, tc.want)
			}
		}
	})
}

// TestBadInput: every refused form shows its message next to the field
// and stores nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, queues.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)
		tests := []struct {
			name, field, message string
			form                 url.Values
		}{
			{"bad name", "name", "letters, digits", form("no spaces", nil)},
			{"taken name", "name", "already exists", form("default", nil)},
			{"GPUs not a number", "maxGpus", "whole number", form("q1", url.Values{"maxGpus": {"many"}})},
			{"negative CPUs", "maxCpu", "number of CPUs", form("q1", url.Values{"maxCpu": {"-1"}})},
			{"price with too many decimals", "cpuPrice", "decimal", form("q1", url.Values{"cpuPrice": {"0.0000001"}})},
			{"GPU price line", "gpuPrices", "line 2", form("q1", url.Values{"gpuPrices": {"A100 1\nH100"}})},
			{"negative price", "prices", "negative", form("q1", url.Values{"startFee": {"-1"}})},
			{"zero multiplier", "prices", "multiplier", form("q1", url.Values{"multiplier": {"0"}})},
			{"unknown mode", "mode", "choose", form("q1", url.Values{"mode": {"FAST"}})},
			{"default CPU not a number", "defaultCpu", "number of CPUs", form("q1", url.Values{"defaultCpu": {"lots"}})},
			{"zero default CPU", "defaultCpu", "more than 0", form("q1", url.Values{"defaultCpu": {"0"}})},
			{"default CPU over the limit", "defaultCpu", "more than the 16 CPUs", form("q1", url.Values{"defaultCpu": {"17"}})},
			{"default memory over the limit", "defaultMemoryMiB", "more than the 65536 MiB", form("q1", url.Values{"defaultMemoryMiB": {"65537"}})},
			{"idle timeout not a number", "idleTimeout", "number of minutes", form("q1", url.Values{"idleTimeout": {"soon"}})},
			{"negative idle timeout", "idleTimeout", "number of minutes", form("q1", url.Values{"idleTimeout": {"-5"}})},
			{"idle timeout over 30 days", "idleTimeout", "from 0 (never) to 30 days", form("q1", url.Values{"idleTimeout": {"43201"}})},
			{"idle timeout far over 30 days", "idleTimeout", "from 0 (never) to 30 days", form("q1", url.Values{"idleTimeout": {"1e300"}})},
		}
		for _, tc := range tests {
			res := admin.Post("/admin/queues", tc.form).Want(t, http.StatusBadRequest)
			res.Contains(t, `id="queue-`+tc.field+`-errors"`, tc.message)
			if res.URL != "/admin/queues" {
				t.Fatalf("%s: ended at %s", tc.name, res.URL)
			}
		}
		if n := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID)).CountX(sys); n != 1 {
			t.Fatalf("%d queues, want only the default one", n)
		}
		// An edit refused keeps the queue as it was.
		q := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID)).OnlyX(sys)
		admin.Post("/admin/queues/"+q.ID, form("renamed", url.Values{"maxGpus": {"-2"}})).Want(t, http.StatusBadRequest)
		if got := e.Ent.Queue.GetX(sys, q.ID); got.Name != "default" {
			t.Fatalf("refused edit renamed the queue to %s", got.Name)
		}
	})
}

// TestAccess: members get 403 everywhere; another tenant's queues are not
// found and cannot be changed or linked to.
func TestAccess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, queues.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		theirs := e.Ent.Queue.Query().Where(queue.TenantID(b.Ent.ID)).OnlyX(sys)
		theirNode := e.Ent.Node.Create().SetTenantID(b.Ent.ID).SetName("their-node").SaveX(sys)
		ours := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID)).OnlyX(sys)

		member := e.SignIn(a.Member.Email)
		for _, p := range []string{"/admin/queues", "/admin/queues/new", "/admin/queues/" + ours.ID} {
			member.Get(p).Want(t, http.StatusForbidden)
		}
		member.Post("/admin/queues", form("mine", nil)).Want(t, http.StatusForbidden)
		member.Post("/admin/queues/"+ours.ID, form("mine", nil)).Want(t, http.StatusForbidden)

		admin := e.SignIn(a.Admin.Email)
		admin.Get("/admin/queues").Want(t, http.StatusOK).Lacks(t, theirs.ID)
		admin.Get("/admin/queues/"+theirs.ID).Want(t, http.StatusNotFound)
		admin.Post("/admin/queues/"+theirs.ID, form("stolen", nil)).Want(t, http.StatusNotFound)
		res := admin.Post("/admin/queues", form("sneaky", url.Values{"nodes": {theirNode.ID}}))
		if res.Status != http.StatusBadRequest && res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
			t.Fatalf("linking another tenant's node: status %d\n%s", res.Status, res.Body)
		}
		if n := e.Ent.Queue.Query().CountX(sys); n != 2 {
			t.Fatalf("%d queues, want the two defaults", n)
		}
		if got := e.Ent.Queue.GetX(sys, theirs.ID); got.Name != "default" {
			t.Fatalf("another tenant renamed the queue to %s", got.Name)
		}
	})
}

package nodes_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/nodes"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var joinRe = regexp.MustCompile(`levers9 agent join --server http://levers9.test --invite (lv9_[a-z2-7]+)`)

// TestInvites: an admin creates an invite, sees its join command once, and
// revokes it; the code joins (its hash is the stored one).
func TestInvites(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, nodes.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)

		admin.Get("/nodes").Want(t, http.StatusOK).Contains(t, "No nodes yet", "No invites yet", `id="invite-form"`)
		res := admin.Post("/nodes/invites", url.Values{"nodeName": {"gpu-7"}, "expiresHours": {"48"}}).Want(t, http.StatusOK)
		m := joinRe.FindStringSubmatch(res.Body)
		if m == nil {
			t.Fatalf("no join command on the page:\n%s", res.Body)
		}
		inv := e.Ent.NodeInvite.Query().OnlyX(sys)
		if inv.CodeHash != auth.HashSecret(m[1]) || inv.NodeName != "gpu-7" {
			t.Fatalf("stored invite %+v does not match code %s", inv, m[1])
		}
		if d := time.Until(inv.ExpiresAt); d < 47*time.Hour || d > 49*time.Hour {
			t.Fatalf("invite expires in %v, want 48h", d)
		}
		again := admin.Get("/nodes").Want(t, http.StatusOK)
		again.Contains(t, "invite-"+inv.ID, "gpu-7", "open")
		again.Lacks(t, m[1]) // shown once

		admin.Post("/nodes/invites/"+inv.ID+"/revoke", nil).Want(t, http.StatusOK).Contains(t, "revoked")
		if e.Ent.NodeInvite.GetX(sys, inv.ID).RevokedAt == nil {
			t.Fatal("the invite was not revoked")
		}
	})
}

// TestInviteBadInput: wrong lifetimes are shown next to the field and
// nothing is stored.
func TestInviteBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, nodes.Register)
		a := e.NewTenant("acme")
		admin := e.SignIn(a.Admin.Email)
		for _, hours := range []string{"0", "abc", "721", "-3", ""} {
			res := admin.Post("/nodes/invites", url.Values{"nodeName": {"x"}, "expiresHours": {hours}}).Want(t, http.StatusBadRequest)
			res.Contains(t, `id="invite-expiresHours-errors"`, "whole number of hours")
			res.Lacks(t, "agent join")
		}
		admin.Post("/nodes/invites", url.Values{"nodeName": {"has space"}, "expiresHours": {"1"}}).Want(t, http.StatusBadRequest).
			Contains(t, `id="invite-nodeName-errors"`, "1 to 63 letters").Lacks(t, "agent join")
		if n := e.Ent.NodeInvite.Query().CountX(viewer.SystemContext(context.Background())); n != 0 {
			t.Fatalf("%d invites stored from bad input", n)
		}
	})
}

// TestNodesList shows status, inventory, heartbeat and running services,
// and only the viewer's tenant's nodes.
func TestNodesList(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, nodes.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		beat := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		n := e.Ent.Node.Create().SetTenantID(a.Ent.ID).SetName("gpu-1").SetStatus(node.StatusOnline).
			SetLastHeartbeatAt(beat).SetAgentVersion("v1.2.3").
			SetInventory(inventory.Inventory{CPUs: 32, MemoryMiB: 128 * 1024, GPUs: []inventory.GPU{{Type: "A100", Count: 4}}}).
			SaveX(sys)
		e.Ent.Node.Create().SetTenantID(b.Ent.ID).SetName("secret-box").SaveX(sys)
		env, err := tenancy.MainEnvironmentID(sys, e.Ent, a.Ent.ID)
		if err != nil {
			t.Fatal(err)
		}
		q := e.Ent.Queue.Query().Where(queue.TenantID(a.Ent.ID)).FirstX(sys)
		j := e.Ent.Job.Create().SetTenantID(a.Ent.ID).SetEnvironmentID(env).SetName("train-llm").
			SetQueueID(q.ID).SetOwnerID(a.Member.ID).SetStatus(job.StatusRunning).
			SetSpec(jobspec.Job{Queue: q.Name, Services: []jobspec.Service{{Name: "worker", Command: []string{"true"}}}}).SaveX(sys)
		e.Ent.Service.Create().SetTenantID(a.Ent.ID).SetEnvironmentID(env).SetJobID(j.ID).SetName("worker").
			SetNodeID(n.ID).SetStatus(service.StatusRunning).SetCPU(2).SetMemoryMib(1024).
			SetGpus(1).SetGpuType("A100").SetGpuDevices([]string{"2"}).SaveX(sys)

		for _, email := range []string{a.Admin.Email, a.Member.Email} {
			res := e.SignIn(email).Get("/nodes").Want(t, http.StatusOK)
			res.Contains(t, "gpu-1", "ONLINE", "process", "30 / 32", "127.0 GiB / 128.0 GiB",
				"4 × A100: 3 free; booked 1 (2)", "2026-03-04 05:06:07", "v1.2.3",
				`href="/jobs/`+j.ID+`"`, "train-llm", "worker")
			res.Lacks(t, "secret-box")
		}
		e.SignIn(b.Admin.Email).Get("/nodes").Want(t, http.StatusOK).Contains(t, "secret-box").Lacks(t, "gpu-1", "train-llm")
	})
}

// TestInviteAccess: members cannot see, create or revoke invites, and no
// one reaches another tenant's invite by its ID.
func TestInviteAccess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, nodes.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)
		admin.Post("/nodes/invites", url.Values{"nodeName": {"gpu-9"}, "expiresHours": {"1"}}).Want(t, http.StatusOK)
		inv := e.Ent.NodeInvite.Query().OnlyX(sys)

		member := e.SignIn(a.Member.Email)
		member.Get("/nodes").Want(t, http.StatusOK).Lacks(t, "invite-form", inv.ID, "gpu-9")
		member.Post("/nodes/invites", url.Values{"nodeName": {"mine"}, "expiresHours": {"1"}}).Want(t, http.StatusForbidden)
		member.Post("/nodes/invites/"+inv.ID+"/revoke", nil).Want(t, http.StatusForbidden)

		stranger := e.SignIn(b.Admin.Email)
		stranger.Get("/nodes").Want(t, http.StatusOK).Lacks(t, inv.ID, "gpu-9")
		stranger.Post("/nodes/invites/"+inv.ID+"/revoke", nil).Want(t, http.StatusNotFound)

		if n := e.Ent.NodeInvite.Query().CountX(sys); n != 1 {
			t.Fatalf("%d invites, want the admin's one", n)
		}
		if e.Ent.NodeInvite.Query().Where(nodeinvite.RevokedAtNotNil()).ExistX(sys) {
			t.Fatal("an invite was revoked by someone who may not")
		}
	})
}

package nodes_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

// TestJoin: an invite makes one offline node of its tenant, in the default
// queue, named by the agent, else by the invite, else by the host; the
// invite is then used. Every refusal has its own code and writes nothing.
func TestJoin(t *testing.T) {
	t.Parallel()
	inv := wire.Inventory{CPUs: 4, MemoryMiB: 1024}
	cases := []struct {
		name       string
		inviteName string
		// before changes the invite (or the world) before the join.
		before   func(t *testing.T, w *world, code string, inv *ent.NodeInvite)
		req      wire.JoinRequest // Invite is filled in unless noCode
		noCode   bool
		want     nodes.RefusalCode // "": the join succeeds
		wantName string
	}{
		{name: "agent names the node", inviteName: "from-invite", req: wire.JoinRequest{Name: "gpu-01", Hostname: "host", Inventory: inv}, wantName: "gpu-01"},
		{name: "invite names the node", inviteName: "rack1-a", req: wire.JoinRequest{Hostname: "host", Inventory: inv}, wantName: "rack1-a"},
		{name: "host names the node", req: wire.JoinRequest{Name: "  ", Hostname: "host-7", Inventory: inv}, wantName: "host-7"},
		{name: "used once", req: wire.JoinRequest{Name: "second", Inventory: inv}, want: nodes.InviteUsed,
			before: func(t *testing.T, w *world, code string, _ *ent.NodeInvite) {
				if _, err := w.nodes.Join(context.Background(), wire.JoinRequest{Invite: code, Name: "first", Inventory: inv}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "expired", req: wire.JoinRequest{Name: "late", Inventory: inv}, want: nodes.InviteExpired,
			before: func(_ *testing.T, w *world, _ string, i *ent.NodeInvite) { w.now = i.ExpiresAt }},
		{name: "revoked", req: wire.JoinRequest{Name: "revoked", Inventory: inv}, want: nodes.InviteRevoked,
			before: func(t *testing.T, w *world, _ string, i *ent.NodeInvite) {
				if _, err := w.nodes.RevokeInvite(w.admin, i.ID); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "unknown", req: wire.JoinRequest{Invite: "lv9_nosuchcode", Name: "x", Inventory: inv}, noCode: true, want: nodes.InviteUnknown},
		{name: "no code", req: wire.JoinRequest{Name: "x", Inventory: inv}, noCode: true, want: nodes.BadRequest},
		{name: "bad name", req: wire.JoinRequest{Name: "no spaces allowed", Inventory: inv}, want: nodes.BadName},
		{name: "name starting with a dash", req: wire.JoinRequest{Name: "-lead", Inventory: inv}, want: nodes.BadName},
		{name: "no name at all", req: wire.JoinRequest{Inventory: inv}, want: nodes.BadName},
		{name: "name taken", req: wire.JoinRequest{Name: "taken", Inventory: inv}, want: nodes.NameTaken,
			before: func(t *testing.T, w *world, _ string, _ *ent.NodeInvite) {
				other, _ := w.invite(t, "", time.Hour)
				if _, err := w.nodes.Join(context.Background(), wire.JoinRequest{Invite: other, Name: "taken", Inventory: inv}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "bad inventory", req: wire.JoinRequest{Name: "x", Inventory: wire.Inventory{CPUs: -1}}, want: nodes.BadInventory},
		{name: "bad GPU entry", req: wire.JoinRequest{Name: "x", Inventory: wire.Inventory{CPUs: 1, GPUs: []wire.GPU{{Type: "", Count: 1}}}}, want: nodes.BadInventory},
	}
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		start := w.now
		// One world, one clock: the cases run one after another.
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				w.now = start
				code, inv := w.invite(t, tc.inviteName, time.Hour)
				if tc.before != nil {
					tc.before(t, w, code, inv)
				}
				req := tc.req
				if !tc.noCode {
					req.Invite = code
				}
				nodesBefore := w.db.Ent.Node.Query().CountX(w.sys)
				usedBefore := w.db.Ent.NodeInvite.Query().Where(nodeinvite.UsedAtNotNil()).CountX(w.sys)

				res, err := w.nodes.Join(context.Background(), req)

				if tc.want != "" {
					var no *nodes.Refusal
					if !errors.As(err, &no) || no.Code != tc.want || no.Message == "" {
						t.Fatalf("join = %+v, %v; want refusal %s", res, err, tc.want)
					}
					if n := w.db.Ent.Node.Query().CountX(w.sys); n != nodesBefore {
						t.Errorf("a refused join wrote nodes: %d before, %d after", nodesBefore, n)
					}
					if n := w.db.Ent.NodeInvite.Query().Where(nodeinvite.UsedAtNotNil()).CountX(w.sys); n != usedBefore {
						t.Errorf("a refused join used an invite: %d used before, %d after", usedBefore, n)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				n, err := w.db.Ent.Node.Query().Where(node.ID(res.NodeID)).WithQueues().Only(w.sys)
				if err != nil {
					t.Fatal(err)
				}
				if res.Name != tc.wantName || n.Name != tc.wantName || n.TenantID != w.tenant.ID ||
					n.Status != node.StatusOffline || n.Inventory.CPUs != 4 || n.CredentialHash != auth.HashSecret(res.Credential) {
					t.Errorf("node = %+v (answer %+v); want %q of tenant %s, offline, 4 CPUs, credential's hash",
						n, res, tc.wantName, w.tenant.ID)
				}
				if len(n.Edges.Queues) != 1 || n.Edges.Queues[0].Name != tenancy.DefaultQueue {
					t.Errorf("node queues = %v; want the default queue", n.Edges.Queues)
				}
				used, err := w.db.Ent.NodeInvite.Get(w.sys, inv.ID)
				if err != nil || used.UsedAt == nil || !used.UsedAt.Equal(w.now) || used.NodeID != n.ID {
					t.Errorf("invite after the join = %+v, %v; want used now by %s", used, err, n.ID)
				}
			})
		}
	})
}

// TestJoinRace: agents racing for one invite make one node; the others are
// told the invite is used.
func TestJoinRace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		code, _ := w.invite(t, "", time.Hour)
		const agents = 4
		errs := make([]error, agents)
		var wg sync.WaitGroup
		for i := range agents {
			wg.Go(func() {
				_, errs[i] = w.nodes.Join(context.Background(), wire.JoinRequest{
					Invite: code, Name: "racer-" + string(rune('a'+i)), Inventory: wire.Inventory{CPUs: 1, MemoryMiB: 64}})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			var no *nodes.Refusal
			switch {
			case err == nil:
				won++
			case errors.As(err, &no) && no.Code == nodes.InviteUsed:
			default:
				t.Errorf("a losing join: %v; want INVITE_USED", err)
			}
		}
		if won != 1 {
			t.Errorf("%d joins won one invite; want 1", won)
		}
		if n := w.db.Ent.Node.Query().CountX(w.sys); n != 1 {
			t.Errorf("%d nodes from one invite; want 1", n)
		}
		inQueue := w.db.Ent.Queue.Query().Where(queue.Name(tenancy.DefaultQueue)).QueryNodes().CountX(w.sys)
		if inQueue != 1 {
			t.Errorf("%d nodes in the default queue; want 1", inQueue)
		}
	})
}

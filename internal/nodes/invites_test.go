package nodes_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/nodes"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestCreateServerInvite: the invite the server gives its built-in node
// belongs to the tenant, is recorded as made by "system", stores only the
// code's hash and expires after its lifetime; a name that breaks the
// node-name rule is refused before anything is written.
func TestCreateServerInvite(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		ctx := context.Background()
		sys := fixture.Sys()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		db := tn.DB
		now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		ns := &nodes.Service{Ent: db.Ent, Now: func() time.Time { return now }}

		code, err := ns.CreateServerInvite(ctx, tn.ID, "local", 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := db.Ent.NodeInvite.Query().Where(nodeinvite.CodeHash(auth.HashSecret(code))).Only(sys)
		if err != nil {
			t.Fatalf("the invite is not found by its code's hash: %v", err)
		}
		if inv.TenantID != tn.ID || inv.NodeName != "local" || inv.CreatedByID != "system" ||
			!inv.ExpiresAt.Equal(now.Add(10*time.Minute)) || inv.UsedAt != nil || inv.RevokedAt != nil {
			t.Fatalf("invite = %+v; want tenant %s, name local, by system, expiring %v, unused", inv, tn.ID, now.Add(10*time.Minute))
		}

		_, err = ns.CreateServerInvite(ctx, tn.ID, "-local", 10*time.Minute)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.BadUserInput || fe.Field != "nodeName" {
			t.Fatalf("bad name: err = %v; want BAD_USER_INPUT on nodeName", err)
		}
		if n := db.Ent.NodeInvite.Query().CountX(sys); n != 1 {
			t.Fatalf("%d invites after a refused one; want 1", n)
		}
	})
}

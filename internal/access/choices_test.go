package access_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestChoicesOf: a member may pick exactly the queues and projects granted
// to one of their groups, an admin everything of their tenant, and nobody
// anything of another tenant; IsProjectMember and CanUseQueue agree item by
// item with the lists.
func TestChoicesOf(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		ctx := context.Background()
		sys := viewer.SystemContext(ctx)
		db, err := database.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		ten := &tenancy.Service{DB: db, Log: slog.New(slog.DiscardHandler), LocalStorageRoot: t.TempDir()}
		if _, err := ten.Bootstrap(ctx, tenancy.Seed{AdminPassword: "correct horse battery", SuperadminPassword: "correct horse battery"}); err != nil {
			t.Fatal(err)
		}
		newTenant := func(slug string) (*ent.Tenant, *viewer.Viewer) {
			t.Helper()
			tn, admin, err := ten.CreateTenant(sys, tenancy.NewTenant{Name: slug, Slug: slug, EmailDomains: []string{slug + ".test"},
				AdminEmail: "admin@" + slug + ".test", AdminPassword: "correct horse battery", BudgetPolicy: tenant.BudgetPolicyStop})
			if err != nil {
				t.Fatal(err)
			}
			env, err := tenancy.MainEnvironmentID(sys, db.Ent, tn.ID)
			if err != nil {
				t.Fatal(err)
			}
			return tn, &viewer.Viewer{UserID: admin.ID, TenantID: tn.ID, EnvironmentID: env, Admin: true}
		}
		alpha, alphaAdmin := newTenant("alpha")
		beta, _ := newTenant("beta")
		c := db.Ent
		member, err := ten.CreateUser(viewer.NewContext(ctx, alphaAdmin), tenancy.NewUser{Email: "m@alpha.test", Password: "correct horse battery"})
		if err != nil {
			t.Fatal(err)
		}
		team := c.Group.Create().SetTenantID(alpha.ID).SetName("team").SaveX(sys)
		other := c.Group.Create().SetTenantID(alpha.ID).SetName("other").SaveX(sys)
		c.Membership.Create().SetTenantID(alpha.ID).SetUserID(member.ID).SetGroup(team).SaveX(sys)
		c.Queue.Create().SetTenantID(alpha.ID).SetName("gpu").AddGroups(team).SaveX(sys)
		c.Queue.Create().SetTenantID(alpha.ID).SetName("private").AddGroups(other).SaveX(sys)
		c.Project.Create().SetTenantID(alpha.ID).SetName("vision").AddGroups(team, other).SaveX(sys)
		c.Project.Create().SetTenantID(alpha.ID).SetName("secret").AddGroups(other).SaveX(sys)
		c.Project.Create().SetTenantID(alpha.ID).SetName("orphan").SaveX(sys)
		c.Queue.Create().SetTenantID(beta.ID).SetName("beta-queue").SaveX(sys)
		c.Project.Create().SetTenantID(beta.ID).SetName("beta-project").SaveX(sys)

		memberCtx := viewer.NewContext(ctx, &viewer.Viewer{UserID: member.ID, TenantID: alpha.ID, EnvironmentID: alphaAdmin.EnvironmentID})
		for _, tc := range []struct {
			name             string
			ctx              context.Context
			queues, projects []string
		}{
			// The member's group everyone may use the default queue.
			{"member", memberCtx, []string{"default", "gpu"}, []string{"vision"}},
			{"admin", viewer.NewContext(ctx, alphaAdmin), []string{"default", "gpu", "private"}, []string{"orphan", "secret", "vision"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ch, err := access.ChoicesOf(tc.ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				var qs, ps []string
				for _, q := range ch.Queues {
					qs = append(qs, q.Name)
				}
				for _, p := range ch.Projects {
					ps = append(ps, p.Name)
				}
				if !slices.Equal(qs, tc.queues) || !slices.Equal(ps, tc.projects) {
					t.Fatalf("choices: queues %v projects %v, want %v and %v", qs, ps, tc.queues, tc.projects)
				}
				for _, q := range c.Queue.Query().AllX(sys) {
					ok, err := access.CanUseQueue(tc.ctx, c, q.ID)
					if err != nil {
						t.Fatal(err)
					}
					if want := slices.Contains(tc.queues, q.Name) && q.TenantID == alpha.ID; ok != want {
						t.Errorf("CanUseQueue(%s) = %v, want %v", q.Name, ok, want)
					}
				}
				for _, p := range c.Project.Query().AllX(sys) {
					ok, err := access.IsProjectMember(tc.ctx, c, p.ID)
					if err != nil {
						t.Fatal(err)
					}
					if want := slices.Contains(tc.projects, p.Name) && p.TenantID == alpha.ID; ok != want {
						t.Errorf("IsProjectMember(%s) = %v, want %v", p.Name, ok, want)
					}
				}
			})
		}
	})
}

package access_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestChoicesOf: a member may pick exactly the queues and projects granted
// to one of their groups, an admin everything of their tenant, and nobody
// anything of another tenant; CanUseQueue and IsProjectMember agree item by
// item with the lists.
func TestChoicesOf(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		alpha := fixture.New(t, url, fixture.TenantOptions{Slug: "alpha"})
		beta := fixture.NewTenant(t, alpha.DB, fixture.TenantOptions{Slug: "beta"})
		member := alpha.AddMember(t, "m")
		team, other := alpha.AddGroup(t, "team", member), alpha.AddGroup(t, "other")
		alpha.AddQueue(t, "gpu", team)
		alpha.AddQueue(t, "private", other)
		alpha.AddProject(t, "vision", team, other)
		alpha.AddProject(t, "secret", other)
		alpha.AddProject(t, "orphan")
		beta.AddQueue(t, "beta-queue", beta.Group(t, "everyone"))
		beta.AddProject(t, "beta-project", beta.Group(t, "everyone"))

		c, sys := alpha.DB.Ent, fixture.Sys()
		for _, tc := range []struct {
			name             string
			ctx              context.Context
			queues, projects []string
		}{
			// Every member is in the group everyone, which may use the
			// default queue.
			{"member", alpha.As(member), []string{"default", "gpu"}, []string{"vision"}},
			{"admin", alpha.AsAdmin(), []string{"default", "gpu", "private"}, []string{"orphan", "secret", "vision"}},
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
					if want := q.TenantID == alpha.ID && slices.Contains(tc.queues, q.Name); ok != want {
						t.Errorf("CanUseQueue(%s of %s) = %v, want %v", q.Name, q.TenantID, ok, want)
					}
				}
				for _, p := range c.Project.Query().AllX(sys) {
					ok, err := access.IsProjectMember(tc.ctx, c, p.ID)
					if err != nil {
						t.Fatal(err)
					}
					if want := p.TenantID == alpha.ID && slices.Contains(tc.projects, p.Name); ok != want {
						t.Errorf("IsProjectMember(%s of %s) = %v, want %v", p.Name, p.TenantID, ok, want)
					}
				}
			})
		}
	})
}

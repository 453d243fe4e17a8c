package graph_test

import (
	"context"
	"slices"
	"testing"

	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

// TestQueuesShowsUsableQueuesOnly: a member lists exactly the queues one of
// their groups may use (the queues submitJob accepts from them); an admin
// lists every queue of the tenant.
func TestQueuesShowsUsableQueuesOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a, _ := e.newTenant("alpha"), e.newTenant("beta")
		sys := viewer.SystemContext(context.Background())
		c := e.db.Ent
		team := c.Group.Create().SetTenantID(a.ent.ID).SetName("team").SaveX(sys)
		ml := c.Group.Create().SetTenantID(a.ent.ID).SetName("ml").SaveX(sys)
		c.Membership.Create().SetTenantID(a.ent.ID).SetUserID(a.member.ID).SetGroup(team).SaveX(sys)
		c.Membership.Create().SetTenantID(a.ent.ID).SetUserID(a.admin.ID).SetGroup(ml).SaveX(sys)
		c.Queue.Create().SetTenantID(a.ent.ID).SetName("gpu").AddGroups(team, ml).SaveX(sys)
		c.Queue.Create().SetTenantID(a.ent.ID).SetName("private").AddGroups(ml).SaveX(sys)
		c.Queue.Create().SetTenantID(a.ent.ID).SetName("orphan").SaveX(sys)

		list := func(token string) []string {
			t.Helper()
			return e.names(t, token, `{ queues(first: 100, orderBy: {field: NAME, direction: ASC}) { totalCount edges { node { name } } } }`, "queues")
		}
		if got, want := list(a.memberToken), []string{"default", "gpu"}; !slices.Equal(got, want) {
			t.Fatalf("member sees queues %v, want %v", got, want)
		}
		if got, want := list(a.adminToken), []string{"default", "gpu", "orphan", "private"}; !slices.Equal(got, want) {
			t.Fatalf("admin sees queues %v, want %v", got, want)
		}

		// What a member sees is what they may submit to, queue by queue.
		member := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: a.member.ID, TenantID: a.ent.ID, EnvironmentID: a.mainEnv})
		for _, q := range c.Queue.Query().Where(queue.TenantID(a.ent.ID)).AllX(sys) {
			ok, err := access.CanUseQueue(member, c, q.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := q.Name == "default" || q.Name == "gpu"; ok != want {
				t.Errorf("member may use queue %s: %v, want %v", q.Name, ok, want)
			}
		}
		// Filtering by name does not get round it.
		r := e.gql(a.memberToken, `{ queues(where: {name: "private"}) { totalCount } }`, nil)
		r.ok(t)
		var out struct{ Queues struct{ TotalCount int } }
		r.decode(t, &out)
		if out.Queues.TotalCount != 0 {
			t.Fatalf("member finds queue private by name: %+v", out)
		}
	})
}

// TestProjectsShowsUsableProjectsOnly: projects lists what the viewer may
// charge (access.UsableProjects, the rule submitJob and the dashboard use):
// a member their groups' projects, an admin every project of the tenant,
// and a name filter does not get round it.
func TestProjectsShowsUsableProjectsOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		e := newEnv(t, url)
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		sys := viewer.SystemContext(context.Background())
		c := e.db.Ent
		team := c.Group.Create().SetTenantID(a.ent.ID).SetName("team").SaveX(sys)
		ml := c.Group.Create().SetTenantID(a.ent.ID).SetName("ml").SaveX(sys)
		c.Membership.Create().SetTenantID(a.ent.ID).SetUserID(a.member.ID).SetGroup(team).SaveX(sys)
		c.Project.Create().SetTenantID(a.ent.ID).SetName("vision").AddGroups(team, ml).SaveX(sys)
		c.Project.Create().SetTenantID(a.ent.ID).SetName("secret").AddGroups(ml).SaveX(sys)
		c.Project.Create().SetTenantID(a.ent.ID).SetName("orphan").SaveX(sys)
		c.Project.Create().SetTenantID(b.ent.ID).SetName("beta-only").SaveX(sys)

		list := func(token, where string) []string {
			t.Helper()
			return e.names(t, token, `{ projects(first: 100, orderBy: {field: NAME, direction: ASC}`+where+`) { totalCount edges { node { name } } } }`, "projects")
		}
		if got, want := list(a.memberToken, ""), []string{"vision"}; !slices.Equal(got, want) {
			t.Fatalf("member sees projects %v, want %v", got, want)
		}
		if got, want := list(a.adminToken, ""), []string{"orphan", "secret", "vision"}; !slices.Equal(got, want) {
			t.Fatalf("admin sees projects %v, want %v", got, want)
		}
		if got := list(a.memberToken, `, where: {name: "secret"}`); len(got) != 0 {
			t.Fatalf("member finds project secret by name: %v", got)
		}
		// What a member sees is what they may charge, project by project.
		member := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: a.member.ID, TenantID: a.ent.ID, EnvironmentID: a.mainEnv})
		for _, p := range c.Project.Query().AllX(sys) {
			ok, err := access.IsProjectMember(member, c, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := p.Name == "vision"; ok != want {
				t.Errorf("member may charge project %s: %v, want %v", p.Name, ok, want)
			}
		}
	})
}

// names runs query, a connection named field with totalCount and the
// edges' names, and returns the names after checking the count.
func (e *env) names(t *testing.T, token, query, field string) []string {
	t.Helper()
	r := e.gql(token, query, nil)
	r.ok(t)
	var out map[string]struct {
		TotalCount int
		Edges      []struct{ Node struct{ Name string } }
	}
	r.decode(t, &out)
	var names []string
	for _, e := range out[field].Edges {
		names = append(names, e.Node.Name)
	}
	if out[field].TotalCount != len(names) {
		t.Fatalf("%s: totalCount %d for %d names %v", field, out[field].TotalCount, len(names), names)
	}
	return names
}

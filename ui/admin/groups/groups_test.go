package groups_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/membership"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/admintest"
	"github.com/levers9/levers9/ui/admin/groups"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestGroupsAndMembers: create a group, add and remove a member, delete
// the group; bad names are refused next to the field.
func TestGroupsAndMembers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, groups.Register)
		a := e.NewTenant("acme")
		sys := viewer.SystemContext(context.Background())
		admin := e.SignIn(a.Admin.Email)

		res := admin.Post("/admin/groups", url.Values{"name": {"ml-team"}, "description": {"the ML people"}}).Want(t, http.StatusOK)
		g := e.Ent.Group.Query().Where(group.TenantID(a.Ent.ID), group.Name("ml-team")).OnlyX(sys)
		if res.URL != "/admin/groups/"+g.ID {
			t.Fatalf("ended at %s", res.URL)
		}
		res.Contains(t, "Group ml-team created.", "No members yet", a.Member.Email)
		admin.Get("/admin/groups").Want(t, http.StatusOK).Contains(t, "ml-team", "the ML people", "everyone")

		admin.Post("/admin/groups/"+g.ID+"/members", url.Values{"user": {a.Member.ID}}).Want(t, http.StatusOK).Contains(t, "Member added.")
		m := e.Ent.Membership.Query().Where(membership.GroupID(g.ID)).OnlyX(sys)
		if m.UserID != a.Member.ID {
			t.Fatalf("membership of %s, want the member", m.UserID)
		}
		admin.Get("/admin/groups/"+g.ID).Contains(t, "member-"+m.ID, a.Member.Email)
		// Adding twice is a field error, not a second membership.
		admin.Post("/admin/groups/"+g.ID+"/members", url.Values{"user": {a.Member.ID}}).Want(t, http.StatusBadRequest).
			Contains(t, `id="member-user-errors"`, "in the group already")

		admin.Post("/admin/groups/"+g.ID+"/members/"+m.ID+"/delete", nil).Want(t, http.StatusOK).Contains(t, "Member removed.", "No members yet")
		admin.Post("/admin/groups/"+g.ID+"/delete", nil).Want(t, http.StatusOK).Contains(t, "Group ml-team deleted.")
		if e.Ent.Group.Query().Where(group.ID(g.ID)).ExistX(sys) {
			t.Fatal("the group was not deleted")
		}

		for _, name := range []string{"", "has space", "everyone"} {
			admin.Post("/admin/groups", url.Values{"name": {name}}).Want(t, http.StatusBadRequest).Contains(t, `id="group-name-errors"`)
		}
		if n := e.Ent.Group.Query().Where(group.TenantID(a.Ent.ID)).CountX(sys); n != 1 {
			t.Fatalf("%d groups, want only everyone", n)
		}
		everyone := e.Ent.Group.Query().Where(group.TenantID(a.Ent.ID)).OnlyX(sys)
		admin.Post("/admin/groups/"+everyone.ID+"/delete", nil).Want(t, http.StatusBadRequest)
	})
}

// TestGroupAccess: members get 403; another tenant's groups, members and
// users are not found.
func TestGroupAccess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := admintest.New(t, dbURL, groups.Register)
		a, b := e.NewTenant("acme"), e.NewTenant("other")
		sys := viewer.SystemContext(context.Background())
		ours := e.Ent.Group.Create().SetTenantID(a.Ent.ID).SetName("ours").SaveX(sys)
		theirs := e.Ent.Group.Create().SetTenantID(b.Ent.ID).SetName("theirs").SaveX(sys)
		theirMember := e.Ent.Membership.Create().SetTenantID(b.Ent.ID).SetUserID(b.Member.ID).SetGroupID(theirs.ID).SaveX(sys)

		member := e.SignIn(a.Member.Email)
		member.Get("/admin/groups").Want(t, http.StatusForbidden)
		member.Get("/admin/groups/"+ours.ID).Want(t, http.StatusForbidden)
		member.Post("/admin/groups", url.Values{"name": {"mine"}}).Want(t, http.StatusForbidden)
		member.Post("/admin/groups/"+ours.ID+"/members", url.Values{"user": {a.Member.ID}}).Want(t, http.StatusForbidden)
		member.Post("/admin/groups/"+ours.ID+"/delete", nil).Want(t, http.StatusForbidden)

		admin := e.SignIn(a.Admin.Email)
		admin.Get("/admin/groups").Want(t, http.StatusOK).Lacks(t, "theirs")
		admin.Get("/admin/groups/"+theirs.ID).Want(t, http.StatusNotFound)
		admin.Post("/admin/groups/"+theirs.ID+"/delete", nil).Want(t, http.StatusNotFound)
		admin.Post("/admin/groups/"+theirs.ID+"/members", url.Values{"user": {a.Member.ID}}).Want(t, http.StatusNotFound)
		admin.Post("/admin/groups/"+theirs.ID+"/members/"+theirMember.ID+"/delete", nil).Want(t, http.StatusNotFound)
		// Another tenant's user cannot join our group.
		admin.Post("/admin/groups/"+ours.ID+"/members", url.Values{"user": {b.Member.ID}}).Want(t, http.StatusBadRequest).
			Contains(t, "choose a user of this tenant")

		if !e.Ent.Group.Query().Where(group.ID(theirs.ID)).ExistX(sys) || !e.Ent.Membership.Query().Where(membership.ID(theirMember.ID)).ExistX(sys) {
			t.Fatal("another tenant's group or member was deleted")
		}
		if e.Ent.Membership.Query().Where(membership.GroupID(ours.ID)).ExistX(sys) {
			t.Fatal("a membership was added by someone who may not")
		}
	})
}

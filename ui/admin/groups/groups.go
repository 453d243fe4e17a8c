// Package groups is the admin page of groups and their members: create and
// delete groups, add and remove members. Access to queues, projects and
// buckets is granted to groups, so this is where people get access.
package groups

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/membership"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the group pages, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/groups", app.Admin, h.list)
	rt.Handle("POST /admin/groups", app.Admin, h.create)
	rt.Handle("GET /admin/groups/{id}", app.Admin, h.show)
	rt.Handle("POST /admin/groups/{id}/delete", app.Admin, h.delete)
	rt.Handle("POST /admin/groups/{id}/members", app.Admin, h.addMember)
	rt.Handle("POST /admin/groups/{id}/members/{mid}/delete", app.Admin, h.removeMember)
}

type handlers struct{ rt *app.Router }

var groupFields = adminkit.Shown("name", "description")

type listPage struct {
	Groups []groupRow
	Form   *adminkit.Form
}

// groupRow is one group of the list, formatted.
type groupRow struct {
	ID, Name, Description, Members string
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	return h.renderList(w, r, http.StatusOK, adminkit.NewForm("group", h.rt.CSRFToken(r), nil))
}

func (h *handlers) renderList(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form) error {
	gs, err := h.rt.Deps.DB.Ent.Group.Query().WithMemberships().Order(ent.Asc(group.FieldName)).All(r.Context())
	if err != nil {
		return fmt.Errorf("listing groups: %w", err)
	}
	p := listPage{Form: f}
	for _, g := range gs {
		p.Groups = append(p.Groups, groupRow{ID: g.ID, Name: g.Name, Description: g.Description, Members: strconv.Itoa(len(g.Edges.Memberships))})
	}
	return app.Render(w, r, status, list(h.rt.Frame(r, "Groups"), p))
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "group", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	desc := f.Get("description")
	g, err := h.rt.Deps.DB.Ent.Group.Create().SetInput(ent.CreateGroupInput{Name: f.Get("name"), Description: &desc}).Save(r.Context())
	if err != nil {
		if err := f.Absorb(err, "name", groupFields); err != nil {
			return err
		}
		return h.renderList(w, r, http.StatusBadRequest, f)
	}
	h.rt.Flash(r, "Group "+g.Name+" created.")
	return app.SeeOther(w, r, "/admin/groups/"+g.ID)
}

type showPage struct {
	ID, Name, Description string
	Members               []member
	Users                 []components.Option
	Form                  *adminkit.Form
	Special               bool // the group everyone: every user is in it, it cannot go
}

func (h *handlers) show(w http.ResponseWriter, r *http.Request) error {
	return h.renderShow(w, r, http.StatusOK, adminkit.NewForm("member", h.rt.CSRFToken(r), nil))
}

func (h *handlers) renderShow(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	g, err := c.Group.Get(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	ms, err := c.Membership.Query().Where(membership.GroupID(g.ID)).WithUser().All(ctx)
	if err != nil {
		return fmt.Errorf("listing members of %s: %w", g.ID, err)
	}
	in := map[string]bool{}
	for _, m := range ms {
		in[m.UserID] = true
	}
	us, err := c.User.Query().Order(ent.Asc(user.FieldEmail)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing users: %w", err)
	}
	p := showPage{ID: g.ID, Name: g.Name, Description: g.Description, Form: f, Special: g.Name == tenancy.EveryoneGroup}
	for _, m := range ms {
		p.Members = append(p.Members, member{ID: m.ID, Email: email(m)})
	}
	for _, u := range us {
		if !in[u.ID] && !u.Superadmin {
			p.Users = append(p.Users, components.Option{Value: u.ID, Label: u.Email})
		}
	}
	return app.Render(w, r, status, show(h.rt.Frame(r, "Group "+g.Name), p))
}

func (h *handlers) delete(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	g, err := h.rt.Deps.DB.Ent.Group.Get(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := h.rt.Deps.Tenancy.DeleteGroup(ctx, g.ID); err != nil {
		return err
	}
	h.rt.Flash(r, "Group "+g.Name+" deleted.")
	return app.SeeOther(w, r, "/admin/groups")
}

func (h *handlers) addMember(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "member", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	g, err := c.Group.Get(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	uid := f.Get("user")
	// The user must be one the admin sees: another tenant's is not found.
	if _, err := c.User.Get(ctx, uid); err != nil {
		f.Add("user", "choose a user of this tenant")
		return h.renderShow(w, r, http.StatusBadRequest, f)
	}
	if _, err := c.Membership.Create().SetInput(ent.CreateMembershipInput{UserID: uid, GroupID: g.ID}).Save(ctx); err != nil {
		if len(fault.Classify(err)) == 0 {
			return err
		}
		f.Add("user", "this user is in the group already")
		return h.renderShow(w, r, http.StatusBadRequest, f)
	}
	h.rt.Flash(r, "Member added.")
	return app.SeeOther(w, r, "/admin/groups/"+g.ID)
}

func (h *handlers) removeMember(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	gid := r.PathValue("id")
	m, err := c.Membership.Query().Where(membership.ID(r.PathValue("mid")), membership.GroupID(gid)).Only(ctx)
	if err != nil {
		return err
	}
	if err := c.Membership.DeleteOne(m).Exec(ctx); err != nil {
		return fmt.Errorf("removing member %s: %w", m.ID, err)
	}
	h.rt.Flash(r, "Member removed.")
	return app.SeeOther(w, r, "/admin/groups/"+gid)
}

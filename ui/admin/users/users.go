// Package users is the admin page of a tenant's users: the list with their
// roles, groups and balances, the form adding one (tenancy.CreateUser, as
// the createUser mutation), who joins the group everyone, and grants of
// tokens to a user.
package users

import (
	"fmt"
	"net/http"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/membership"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the user pages, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/users", app.Admin, h.list)
	rt.Handle("POST /admin/users", app.Admin, h.create)
	rt.Handle("POST /admin/users/grant", app.Admin, h.grant)
}

type handlers struct{ rt *app.Router }

var userFields = adminkit.Shown("email", "name", "password", "role")

var roles = []components.Option{
	{Value: string(user.RoleMember), Label: "member"},
	{Value: string(user.RoleAdmin), Label: "tenant admin"},
}

type page struct {
	Users   []userRow
	Options []components.Option // the users, for the grant form
	Form    *adminkit.Form
	Grant   *adminkit.Form
}

// userRow is one user of the table, formatted.
type userRow struct {
	ID, Email, Name, Role string
	Groups                []groupLink
	Balance               string
}

// groupLink is a group a user is a member of.
type groupLink struct{ ID, Name string }

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	f := adminkit.NewForm("user", h.rt.CSRFToken(r), nil)
	f.Values.Set("role", string(user.RoleMember))
	return h.render(w, r, http.StatusOK, f, adminkit.NewForm("grant", f.CSRF, nil))
}

func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, f, grant *adminkit.Form) error {
	ctx := r.Context()
	us, err := h.rt.Deps.DB.Ent.User.Query().Where(user.Superadmin(false)).
		WithMemberships(func(q *ent.MembershipQuery) { q.WithGroup().Order(ent.Asc(membership.FieldCreatedAt)) }).
		Order(ent.Asc(user.FieldEmail)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing users: %w", err)
	}
	ids := make([]string, len(us))
	for i, u := range us {
		ids[i] = u.ID
	}
	balances, err := h.rt.Deps.Ledger.UserBalances(ctx, ids)
	if err != nil {
		return err
	}
	p := page{Form: f, Grant: grant}
	for _, u := range us {
		row := userRow{ID: u.ID, Email: u.Email, Name: u.Name, Role: string(u.Role), Balance: balances[u.ID].String()}
		for _, m := range u.Edges.Memberships {
			if m.Edges.Group != nil {
				row.Groups = append(row.Groups, groupLink{ID: m.GroupID, Name: m.Edges.Group.Name})
			}
		}
		p.Users = append(p.Users, row)
		p.Options = append(p.Options, components.Option{Value: u.ID, Label: u.Email})
	}
	f.Values.Del("password") // never sent back
	return app.Render(w, r, status, view(h.rt.Frame(r, "Users"), p))
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "user", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	u, err := h.rt.Deps.Tenancy.CreateUser(r.Context(), tenancy.NewUser{
		Email: f.Get("email"), Name: f.Get("name"), Password: f.Values.Get("password"), Role: user.Role(f.Get("role")),
	})
	if err != nil {
		if err := f.Absorb(err, "email", userFields); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, f, adminkit.NewForm("grant", f.CSRF, nil))
	}
	h.rt.Flash(r, "User "+u.Email+" added.")
	return app.SeeOther(w, r, "/admin/users")
}

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
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
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
	Users    []*ent.User
	Balances map[string]billing.Tokens // by user ID
	Options  []components.Option       // the users, for the grant form
	Form     *adminkit.Form
	Grant    *adminkit.Form
}

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
	p := page{Users: us, Balances: map[string]billing.Tokens{}, Form: f, Grant: grant}
	for _, u := range us {
		if p.Balances[u.ID], err = h.rt.Deps.Ledger.Balance(ctx, ledger.Payer{UserID: u.ID}); err != nil {
			return fmt.Errorf("balance of %s: %w", u.ID, err)
		}
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

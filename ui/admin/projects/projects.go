// Package projects is the admin page of projects: create and change them
// and the groups whose users are their members, and grant them tokens
// (ledger.Service.Grant, as the grantTokens mutation).
package projects

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the project pages, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/projects", app.Admin, h.list)
	rt.Handle("POST /admin/projects", app.Admin, h.create)
	rt.Handle("GET /admin/projects/{id}", app.Admin, h.show)
	rt.Handle("POST /admin/projects/{id}", app.Admin, h.update)
	rt.Handle("POST /admin/projects/{id}/grant", app.Admin, h.grant)
}

type handlers struct{ rt *app.Router }

var projectFields = adminkit.Shown("name", "description")

// row is a project with its balance, formatted.
type row struct {
	ID, Name, Description, Groups string
	Balance                       string
}

// grantRow is one grant to a project, formatted.
type grantRow struct {
	When, Tokens, Reason string
}

type listPage struct {
	Projects []row
	Groups   []components.Option
	Form     *adminkit.Form
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	return h.renderList(w, r, http.StatusOK, adminkit.NewForm("project", h.rt.CSRFToken(r), nil))
}

func (h *handlers) renderList(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	ps, err := c.Project.Query().WithGroups().Order(ent.Asc(project.FieldName)).All(ctx)
	if err != nil {
		return fmt.Errorf("listing projects: %w", err)
	}
	p := listPage{Form: f}
	ids := make([]string, len(ps))
	for i, pr := range ps {
		ids[i] = pr.ID
	}
	balances, err := h.rt.Deps.Ledger.ProjectBalances(ctx, ids)
	if err != nil {
		return err
	}
	for _, pr := range ps {
		p.Projects = append(p.Projects, row{ID: pr.ID, Name: pr.Name, Description: pr.Description,
			Groups: groupNames(pr), Balance: balances[pr.ID].String()})
	}
	if p.Groups, err = h.groups(r); err != nil {
		return err
	}
	return app.Render(w, r, status, list(h.rt.Frame(r, "Projects"), p))
}

func (h *handlers) groups(r *http.Request) ([]components.Option, error) {
	gs, err := h.rt.Deps.DB.Ent.Group.Query().Order(ent.Asc(group.FieldName)).All(r.Context())
	if err != nil {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	out := make([]components.Option, len(gs))
	for i, g := range gs {
		out[i] = components.Option{Value: g.ID, Label: g.Name}
	}
	return out, nil
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "project", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	desc := f.Get("description")
	pr, err := h.rt.Deps.DB.Ent.Project.Create().SetInput(ent.CreateProjectInput{
		Name: f.Get("name"), Description: &desc, GroupIDs: f.All("groups"),
	}).Save(r.Context())
	if err != nil {
		if err := f.Absorb(err, "name", projectFields); err != nil {
			return err
		}
		return h.renderList(w, r, http.StatusBadRequest, f)
	}
	h.rt.Flash(r, "Project "+pr.Name+" created.")
	return app.SeeOther(w, r, "/admin/projects/"+pr.ID)
}

type showPage struct {
	ID, Name string
	Balance  string
	Grants   []grantRow
	Groups   []components.Option
	Edit     *adminkit.Form
	Grant    *adminkit.Form
}

func (h *handlers) load(r *http.Request) (*ent.Project, error) {
	return h.rt.Deps.DB.Ent.Project.Query().Where(project.ID(r.PathValue("id"))).WithGroups().Only(r.Context())
}

func (h *handlers) show(w http.ResponseWriter, r *http.Request) error {
	pr, err := h.load(r)
	if err != nil {
		return err
	}
	csrf := h.rt.CSRFToken(r)
	return h.renderShow(w, r, http.StatusOK, pr, adminkit.NewForm("project", csrf, values(pr)), adminkit.NewForm("grant", csrf, nil))
}

func values(pr *ent.Project) url.Values {
	v := url.Values{"name": {pr.Name}, "description": {pr.Description}}
	for _, g := range pr.Edges.Groups {
		v.Add("groups", g.ID)
	}
	return v
}

func (h *handlers) renderShow(w http.ResponseWriter, r *http.Request, status int, pr *ent.Project, edit, grant *adminkit.Form) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	p := showPage{ID: pr.ID, Name: pr.Name, Edit: edit, Grant: grant}
	b, err := h.rt.Deps.Ledger.Balance(ctx, ledger.Payer{ProjectID: pr.ID})
	if err != nil {
		return fmt.Errorf("balance of %s: %w", pr.ID, err)
	}
	p.Balance = b.String()
	grants, err := recentGrants(ctx, c, pr.ID)
	if err != nil {
		return err
	}
	for _, g := range grants {
		p.Grants = append(p.Grants, grantRow{When: components.When(&g.CreatedAt),
			Tokens: ledger.EntryOf(g.Tokens).BalanceChange().String(), Reason: g.Reason})
	}
	if p.Groups, err = h.groups(r); err != nil {
		return err
	}
	return app.Render(w, r, status, show(h.rt.Frame(r, "Project "+pr.Name), p))
}

func (h *handlers) update(w http.ResponseWriter, r *http.Request) error {
	pr, err := h.load(r)
	if err != nil {
		return err
	}
	f, err := adminkit.Posted(r, "project", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	name, desc := f.Get("name"), f.Get("description")
	var have []string
	for _, g := range pr.Edges.Groups {
		have = append(have, g.ID)
	}
	in := ent.UpdateProjectInput{Name: &name, Description: &desc}
	in.AddGroupIDs, in.RemoveGroupIDs = diff(have, f.All("groups"))
	if _, err := h.rt.Deps.DB.Ent.Project.UpdateOneID(pr.ID).SetInput(in).Save(r.Context()); err != nil {
		if err := f.Absorb(err, "name", projectFields); err != nil {
			return err
		}
		return h.renderShow(w, r, http.StatusBadRequest, pr, f, adminkit.NewForm("grant", f.CSRF, nil))
	}
	h.rt.Flash(r, "Project "+name+" saved.")
	return app.SeeOther(w, r, "/admin/projects/"+pr.ID)
}

func (h *handlers) grant(w http.ResponseWriter, r *http.Request) error {
	pr, err := h.load(r)
	if err != nil {
		return err
	}
	f, err := adminkit.Posted(r, "grant", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	amount, err := billing.ParseTokens(f.Get("tokens"))
	if err != nil {
		f.Add("tokens", err.Error())
	} else if _, err = h.rt.Deps.Ledger.Grant(r.Context(), ledger.Payer{ProjectID: pr.ID}, amount, f.Get("reason")); err != nil {
		if err := f.Absorb(err, "tokens", adminkit.Shown("tokens", "reason")); err != nil {
			return err
		}
	}
	if f.Invalid() {
		return h.renderShow(w, r, http.StatusBadRequest, pr, adminkit.NewForm("project", f.CSRF, values(pr)), f)
	}
	h.rt.Flash(r, "Granted "+amount.String()+" tokens to "+pr.Name+".")
	return app.SeeOther(w, r, "/admin/projects/"+pr.ID)
}

// diff returns what to add to have and what to remove from it to get want.
func diff(have, want []string) (add, remove []string) {
	for _, w := range want {
		if !slices.Contains(have, w) {
			add = append(add, w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			remove = append(remove, h)
		}
	}
	return add, remove
}

func groupNames(pr *ent.Project) string {
	var out []string
	for _, g := range pr.Edges.Groups {
		out = append(out, g.Name)
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

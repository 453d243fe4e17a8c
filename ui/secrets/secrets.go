// Package secrets is the Secrets page: the environment's secrets by name
// with their variables' names, owner and last change; a form that creates
// (or replaces) one from KEY=VALUE lines; and deletion after a
// confirmation page. Values go one way, into the secrets service: no page
// ever shows one again, not even a refused form.
package secrets

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/secret"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/fault"
	domain "github.com/levers9/levers9/internal/secrets"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// PageSize is how many secrets the table shows at once.
const PageSize = 50

// Service is what the page calls: internal/secrets.Service (as GraphQL's
// createSecret and deleteSecret do).
type Service interface {
	Create(ctx context.Context, name string, values map[string]string, replace bool) (*ent.Secret, error)
	Delete(ctx context.Context, idOrName string) (string, error)
}

// Register adds the Secrets pages. svc nil shows the list but refuses
// changes.
func Register(rt *app.Router, svc Service) {
	h := &handlers{rt: rt, svc: svc}
	rt.Nav("Secrets", "/secrets", app.Member)
	rt.Handle("GET /secrets", app.Member, h.list)
	rt.Handle("POST /secrets", app.Member, h.create)
	rt.Handle("GET /secrets/{id}/delete", app.Member, h.confirm)
	rt.Handle("POST /secrets/{id}/delete", app.Member, h.remove)
}

type handlers struct {
	rt  *app.Router
	svc Service
}

// formFields map the service's fault fields to the form's.
var formFields = adminkit.Shown("name", "values")

// row is one secret, formatted: never its values.
type row struct {
	ID, Name, Keys, Owner, Updated string
	CanDelete                      bool
}

type listPage struct {
	Rows  []row
	Pager components.Page
	Form  *adminkit.Form
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	return h.render(w, r, http.StatusOK, adminkit.NewForm("secret", h.rt.CSRFToken(r), nil))
}

func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	v := viewer.FromContext(ctx)
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	conn, err := c.Secret.Query().Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
		ent.WithSecretOrder(&ent.SecretOrder{Direction: entgql.OrderDirectionAsc, Field: ent.SecretOrderFieldName}))
	if err != nil {
		return fmt.Errorf("listing secrets: %w", err)
	}
	// The owners' emails: one query for the page.
	var owners []string
	for _, e := range conn.Edges {
		owners = append(owners, e.Node.OwnerID)
	}
	emails := map[string]string{}
	if len(owners) > 0 {
		us, err := c.User.Query().Where(user.IDIn(owners...)).Select(user.FieldID, user.FieldEmail).All(ctx)
		if err != nil {
			return fmt.Errorf("reading the secrets' owners: %w", err)
		}
		for _, u := range us {
			emails[u.ID] = u.Email
		}
	}
	p := listPage{Form: f}
	for _, e := range conn.Edges {
		s := e.Node
		owner, ok := emails[s.OwnerID]
		if !ok {
			owner = "—" // a user the viewer may not see
		}
		p.Rows = append(p.Rows, row{ID: s.ID, Name: s.Name, Keys: strings.Join(s.Keys, ", "), Owner: owner,
			Updated: components.When(&s.UpdatedAt) + " UTC", CanDelete: mayChange(v, s)})
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/secrets", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " secrets"
	return app.Render(w, r, status, listView(h.rt.Frame(r, "Secrets"), p))
}

// mayChange is the service's rule, for showing buttons: the owner or an
// admin.
func mayChange(v *viewer.Viewer, s *ent.Secret) bool {
	return v != nil && (v.Admin || v.UserID == s.OwnerID)
}

func (h *handlers) available() error {
	if h.svc == nil {
		return fault.New(fault.Unavailable, "the dashboard has no secrets service")
	}
	return nil
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	if err := h.available(); err != nil {
		return err
	}
	f, err := adminkit.Posted(r, "secret", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	name := f.Get("name")
	values, problems := parseValues(f.Values.Get("values"))
	// The values never go back into the page, even refused.
	f.Values.Del("values")
	for _, msg := range problems {
		f.Add("values", msg)
	}
	if name == "" {
		f.Add("name", "name the secret")
	}
	if !f.Invalid() {
		s, err := h.svc.Create(r.Context(), name, values, f.Has("replace"))
		if err == nil {
			h.rt.Flash(r, "Secret "+s.Name+" saved with "+strings.Join(s.Keys, ", ")+".")
			return app.SeeOther(w, r, "/secrets")
		}
		if err := f.Absorb(err, "values", formFields); err != nil {
			return err
		}
	}
	return h.render(w, r, http.StatusBadRequest, f)
}

// parseValues reads KEY=VALUE lines (blank lines and # comments skipped;
// a value may hold '=' and be empty). Problems name lines and keys, never
// values.
func parseValues(text string) (map[string]string, []string) {
	values := map[string]string{}
	var problems []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		n := i + 1
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			problems = append(problems, fmt.Sprintf("line %d is not KEY=VALUE", n))
			continue
		}
		k = strings.TrimSpace(k)
		if err := domain.CheckKey(k); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: %v", n, err))
			continue
		}
		if err := domain.CheckValue(k, v); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: %v", n, err))
			continue
		}
		if _, dup := values[k]; dup {
			problems = append(problems, fmt.Sprintf("line %d: %s is set twice", n, k))
			continue
		}
		values[k] = v
	}
	if len(values) == 0 && len(problems) == 0 {
		problems = append(problems, "give at least one KEY=VALUE line")
	}
	return values, problems
}

type confirmPage struct {
	ID, Name, Keys string
	CSRF           string
}

// load reads secret id as the viewer and refuses anyone but its owner or
// an admin (the service refuses them too: this says so before the post).
func (h *handlers) load(r *http.Request) (*ent.Secret, error) {
	s, err := h.rt.Deps.DB.Ent.Secret.Query().Where(secret.ID(r.PathValue("id"))).Only(r.Context())
	if err != nil {
		return nil, err
	}
	if !mayChange(viewer.FromContext(r.Context()), s) {
		return nil, fault.New(fault.Forbidden, "only the owner of secret %q or an admin may delete it", s.Name)
	}
	return s, nil
}

func (h *handlers) confirm(w http.ResponseWriter, r *http.Request) error {
	s, err := h.load(r)
	if err != nil {
		return err
	}
	p := confirmPage{ID: s.ID, Name: s.Name, Keys: strings.Join(s.Keys, ", "), CSRF: h.rt.CSRFToken(r)}
	return app.Render(w, r, http.StatusOK, confirmView(h.rt.Frame(r, "Delete secret "+s.Name), p))
}

func (h *handlers) remove(w http.ResponseWriter, r *http.Request) error {
	if err := h.available(); err != nil {
		return err
	}
	s, err := h.load(r)
	if err != nil {
		return err
	}
	if _, err := h.svc.Delete(r.Context(), s.ID); err != nil {
		return err
	}
	h.rt.Flash(r, "Secret "+s.Name+" deleted.")
	return app.SeeOther(w, r, "/secrets")
}

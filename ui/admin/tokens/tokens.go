// Package tokens is the admin page of the viewer's own API tokens (for the
// CLI, SDK and scripts): list, create with the secret shown once, revoke
// (auth.CreateAPIToken and RevokeAPIToken, as the GraphQL mutations). ent
// privacy shows each user only their own tokens, so another user's token
// is not found, admin or not.
package tokens

import (
	"fmt"
	"net/http"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the API token pages, for tenant admins.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Handle("GET /admin/tokens", app.Admin, h.list)
	rt.Handle("POST /admin/tokens", app.Admin, h.create)
	rt.Handle("POST /admin/tokens/{id}/revoke", app.Admin, h.revoke)
}

type handlers struct{ rt *app.Router }

const dateLayout = "2006-01-02"

type page struct {
	Tokens []tokenRow
	Form   *adminkit.Form
	// Secret is set right after a token is made: the only time it shows.
	Secret string
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	return h.render(w, r, http.StatusOK, adminkit.NewForm("token", h.rt.CSRFToken(r), nil), "")
}

func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form, secret string) error {
	// Sign-in sessions are tokens too, but they end with sign-out; the
	// page is about the tokens people make for programs.
	ts, err := h.rt.Deps.DB.Ent.APIToken.Query().Where(apitoken.KindEQ(apitoken.KindAPI)).
		Order(ent.Desc(apitoken.FieldCreatedAt)).All(r.Context())
	if err != nil {
		return fmt.Errorf("listing tokens: %w", err)
	}
	p := page{Form: f, Secret: secret}
	now := h.rt.Deps.Auth.Now()
	for _, t := range ts {
		p.Tokens = append(p.Tokens, describe(t, now))
	}
	return app.Render(w, r, status, view(h.rt.Frame(r, "API tokens"), p))
}

// create issues a token and shows its secret in the answer to the post
// itself, so the secret is never stored in the session or anywhere else.
func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "token", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	var expires *time.Time
	if s := f.Get("expiresAt"); s != "" {
		d, err := time.Parse(dateLayout, s)
		if err != nil {
			f.Add("expiresAt", "must be a date like 2026-12-31")
			return h.render(w, r, http.StatusBadRequest, f, "")
		}
		d = d.AddDate(0, 0, 1) // valid through the whole day, UTC
		expires = &d
	}
	secret, t, err := h.rt.Deps.Auth.CreateAPIToken(r.Context(), f.Get("name"), expires)
	if err != nil {
		if err := f.Absorb(err, "name", adminkit.Shown("name", "expiresAt")); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, f, "")
	}
	h.rt.Deps.Log.Info("API token created in the dashboard", "token", t.ID, "user", t.UserID)
	return h.render(w, r, http.StatusOK, adminkit.NewForm("token", f.CSRF, nil), secret)
}

func (h *handlers) revoke(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	// Only API tokens: revoking a sign-in session here would sign the
	// user out behind their back; sign-out does that.
	t, err := h.rt.Deps.DB.Ent.APIToken.Query().Where(apitoken.ID(id), apitoken.KindEQ(apitoken.KindAPI)).Only(r.Context())
	if err != nil {
		return err
	}
	if _, err := h.rt.Deps.Auth.RevokeAPIToken(r.Context(), t.ID); err != nil {
		return err
	}
	h.rt.Flash(r, "Token "+t.Name+" revoked.")
	return app.SeeOther(w, r, "/admin/tokens")
}

// tokenRow is one token of the list, formatted.
type tokenRow struct {
	ID, Name, Hint             string
	Created, LastUsed, Expires string
	State                      string
	Active                     bool // it still works, and may be revoked
}

func describe(t *ent.APIToken, now time.Time) tokenRow {
	row := tokenRow{ID: t.ID, Name: t.Name, Hint: t.Hint, Created: components.When(&t.CreatedAt),
		LastUsed: components.When(t.LastUsedAt), Expires: components.When(t.ExpiresAt)}
	row.State = auth.TokenState(t, now)
	row.Active = row.State == "active"
	return row
}

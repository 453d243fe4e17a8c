package users

import (
	"net/http"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
)

// grant adds tokens to a user's own balance (ledger.Service.Grant, as the
// grantTokens mutation with a userID): what their jobs without a project
// are charged to.
func (h *handlers) grant(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "grant", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	u, err := c.User.Get(ctx, f.Get("user"))
	if err != nil {
		f.Add("user", "choose a user of this tenant")
	}
	amount, perr := billing.ParseTokens(f.Get("tokens"))
	if perr != nil {
		f.Add("tokens", perr.Error())
	}
	if !f.Invalid() {
		_, err = h.rt.Deps.Ledger.Grant(ctx, ledger.Payer{UserID: u.ID}, amount, f.Get("reason"))
		if err == nil {
			h.rt.Flash(r, "Granted "+amount.String()+" tokens to "+u.Email+".")
			return app.SeeOther(w, r, "/admin/users")
		}
		if err := f.Absorb(err, "tokens", map[string]string{"tokens": "tokens", "reason": "reason", "userID": "user"}); err != nil {
			return err
		}
	}
	return h.render(w, r, http.StatusBadRequest, adminkit.NewForm("user", f.CSRF, nil), f)
}

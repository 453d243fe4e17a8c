package nodes

import (
	"errors"
	"net/http"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/app"
)

// removal is the confirmation page of a node's two ends: revoking its
// credential (the agent is cut off, the node stays listed) and removing
// it (refused while work or a node storage is on it; the page says why
// before the admin asks).
type removal struct {
	ID, Name, Status string
	// Refusal is why the node cannot be removed now; empty: it can.
	Refusal string
	// Revoked: the node has no credential any more.
	Revoked bool
	CSRF    string
}

// registerRemoval adds the confirmation page and its two actions, tenant
// admins only (the node service refuses everyone else too).
func registerRemoval(rt *app.Router, h *handlers) {
	rt.Handle("GET /nodes/{id}/remove", app.Admin, h.confirmRemoval)
	rt.Handle("POST /nodes/{id}/revoke-credential", app.Admin, h.revokeCredential)
	rt.Handle("POST /nodes/{id}/remove", app.Admin, h.remove)
}

func (h *handlers) confirmRemoval(w http.ResponseWriter, r *http.Request) error {
	return h.renderRemoval(w, r, http.StatusOK)
}

// renderRemoval shows the confirmation page with status; a node of another
// tenant is not found (404).
func (h *handlers) renderRemoval(w http.ResponseWriter, r *http.Request, status int) error {
	n, why, err := h.svc.Removable(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	p := removal{ID: n.ID, Name: n.Name, Status: string(n.Status), Revoked: n.CredentialHash == "", CSRF: h.rt.CSRFToken(r)}
	if why != nil {
		p.Refusal = why.Message
	}
	return app.Render(w, r, status, removalView(h.rt.Frame(r, "Remove node "+n.Name), p))
}

func (h *handlers) revokeCredential(w http.ResponseWriter, r *http.Request) error {
	n, err := h.svc.RevokeCredential(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.rt.Flash(r, "The credential of node "+n.Name+" is revoked: its agent is disconnected and can come back only by joining with a new invite.")
	return app.SeeOther(w, r, "/nodes")
}

func (h *handlers) remove(w http.ResponseWriter, r *http.Request) error {
	name, err := h.svc.Delete(r.Context(), r.PathValue("id"))
	var f *fault.Error
	if errors.As(err, &f) && f.Code == fault.BadUserInput {
		// Work arrived since the page was shown: it says why again.
		return h.renderRemoval(w, r, http.StatusConflict)
	}
	if err != nil {
		return err
	}
	h.rt.Flash(r, "Node "+name+" is removed.")
	return app.SeeOther(w, r, "/nodes")
}

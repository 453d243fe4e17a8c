package nodes

import (
	"net/http"
	"strconv"
	"time"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
)

// maxInviteHours is the longest invite the form offers (the domain's).
var maxInviteHours = int(nodes.MaxInviteTTL / time.Hour)

// invite makes an invite and shows its code and join command, once: the
// answer to the post itself carries them, so they are never stored in the
// session or anywhere else.
func (h *handlers) invite(w http.ResponseWriter, r *http.Request) error {
	f, err := adminkit.Posted(r, "invite", h.rt.CSRFToken(r))
	if err != nil {
		return err
	}
	hours, err := strconv.Atoi(f.Get("expiresHours"))
	if err != nil || hours < 1 || hours > maxInviteHours {
		f.Add("expiresHours", "must be a whole number of hours from 1 to "+strconv.Itoa(maxInviteHours))
		return h.render(w, r, http.StatusBadRequest, f, "", "")
	}
	if err := nodes.CheckInviteName(f.Get("nodeName")); err != nil {
		f.Add("nodeName", fault.Classify(err)[0].Message)
		return h.render(w, r, http.StatusBadRequest, f, "", "")
	}
	code, _, err := h.svc.CreateInvite(r.Context(), f.Get("nodeName"), time.Duration(hours)*time.Hour)
	if err != nil {
		if err := f.Absorb(err, "nodeName", map[string]string{"expiresInSeconds": "expiresHours"}); err != nil {
			return err
		}
		return h.render(w, r, http.StatusBadRequest, f, "", "")
	}
	fresh := adminkit.NewForm("invite", f.CSRF, nil)
	fresh.Values.Set("expiresHours", "24")
	return h.render(w, r, http.StatusOK, fresh, code, h.svc.JoinCommand(code))
}

func (h *handlers) revoke(w http.ResponseWriter, r *http.Request) error {
	inv, err := h.svc.RevokeInvite(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.rt.Flash(r, "Invite "+inv.ID+" revoked.")
	return app.SeeOther(w, r, "/nodes")
}

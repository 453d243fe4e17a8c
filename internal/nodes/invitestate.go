package nodes

import (
	"time"

	"github.com/levers9/levers9/ent"
)

// InviteState is the state of invite inv at now in words: "open" (a machine
// may join with it) until it is "revoked", "used" or "expired". It is the
// rule Join applies and the dashboard shows.
func InviteState(inv *ent.NodeInvite, now time.Time) string {
	switch {
	case inv.RevokedAt != nil:
		return "revoked"
	case inv.UsedAt != nil:
		return "used"
	case !now.Before(inv.ExpiresAt):
		return "expired"
	}
	return "open"
}

package auth

import (
	"time"

	"github.com/levers9/levers9/ent"
)

// TokenState is whether token t works at now, in words: "active", or
// "revoked" or "expired" (then Authenticate refuses it).
func TokenState(t *ent.APIToken, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.ExpiresAt != nil && !t.ExpiresAt.After(now):
		return "expired"
	}
	return "active"
}

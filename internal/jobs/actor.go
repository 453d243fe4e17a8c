package jobs

import (
	"context"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/viewer"
)

// ActorName is who v is in messages people read ("cancelled by
// ada@example.com"): the user's email, which every member of the tenant
// may see, not an ID nobody recognises. A viewer without a user (the
// system) is "levers9"; an email that cannot be read falls back to the ID.
func ActorName(ctx context.Context, c *ent.Client, v *viewer.Viewer) string {
	if v == nil || v.UserID == "" {
		return "levers9"
	}
	// The viewer may always read its own user (privacy: tenant or self).
	u, err := c.User.Query().Where(user.ID(v.UserID)).Select(user.FieldEmail).Only(ctx)
	if err != nil || u.Email == "" {
		return v.UserID
	}
	return u.Email
}

package groups

import "github.com/levers9/levers9/ent"

// email is the member's email, or its user ID if the user is hidden.
func email(m *ent.Membership) string {
	if m.Edges.User != nil {
		return m.Edges.User.Email
	}
	return m.UserID
}

package groups

import "github.com/levers9/levers9/ent"

// member is one membership of a group: its ID and the member's email.
type member struct{ ID, Email string }

// email is the member's email, or its user ID if the user is hidden.
func email(m *ent.Membership) string {
	if m.Edges.User != nil {
		return m.Edges.User.Email
	}
	return m.UserID
}

package auth

import (
	"fmt"

	"entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/user"
)

// The user columns joinUser adds to a token's row.
const (
	userTenantAs     = "user__tenant_id"
	userRoleAs       = "user__role"
	userSuperadminAs = "user__superadmin"
)

// joinUser reads the token's user in the token's own query (a JOIN)
// instead of a second query: every authenticated request pays this
// look-up. The columns come back as the token's extra values, in forms
// both databases return alike (text, and 0 or 1).
func joinUser() predicate.APIToken {
	return func(s *sql.Selector) {
		u := sql.Table(user.Table)
		s.Join(u).On(s.C(apitoken.FieldUserID), u.C(user.FieldID))
		s.AppendSelectExprAs(sql.Expr("COALESCE("+u.C(user.FieldTenantID)+", '')"), userTenantAs)
		s.AppendSelectAs(u.C(user.FieldRole), userRoleAs)
		s.AppendSelectExprAs(sql.Expr("CASE WHEN "+u.C(user.FieldSuperadmin)+" THEN 1 ELSE 0 END"), userSuperadminAs)
	}
}

// tokenUser is what joinUser reads of a token's user: the fields a viewer
// is made of, and no more (a partial *ent.User would offer fields never
// read, empty).
type tokenUser struct {
	id, tenantID string
	role         user.Role
	superadmin   bool
}

// joinedUser is the user joinUser read with token t.
func joinedUser(t *ent.APIToken) (tokenUser, error) {
	tenant, err := joinedText(t, userTenantAs)
	if err != nil {
		return tokenUser{}, err
	}
	role, err := joinedText(t, userRoleAs)
	if err != nil {
		return tokenUser{}, err
	}
	v, err := t.Value(userSuperadminAs)
	if err != nil {
		return tokenUser{}, err
	}
	super, ok := v.(int64)
	if !ok {
		return tokenUser{}, fmt.Errorf("reading the user of token %s: superadmin is %T", t.ID, v)
	}
	return tokenUser{id: t.UserID, tenantID: tenant, role: user.Role(role), superadmin: super == 1}, nil
}

func joinedText(t *ent.APIToken, as string) (string, error) {
	v, err := t.Value(as)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return "", fmt.Errorf("reading the user of token %s: %s is %T", t.ID, as, v)
}

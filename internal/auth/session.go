package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// AuthenticateSession is Authenticate for the dashboard: its session keeps
// the ID of the sign-in token (so no secret sits in the sessions table), and
// the token is checked by the same rules on every request: revoked, expired
// and out-of-tenant tokens are refused.
func (s *Service) AuthenticateSession(ctx context.Context, tokenID string) (*viewer.Viewer, error) {
	unauth := fault.New(fault.Unauthenticated, "the session has ended; sign in again")
	if tokenID == "" {
		return nil, unauth
	}
	sys := viewer.SystemContext(ctx)
	t, err := s.Ent.APIToken.Query().
		Where(apitoken.ID(tokenID), apitoken.KindEQ(apitoken.KindSession)).
		WithUser().
		Only(sys)
	if ent.IsNotFound(err) {
		return nil, unauth
	}
	if err != nil {
		return nil, fmt.Errorf("looking up session token: %w", err)
	}
	now := s.Now()
	if t.RevokedAt != nil || (t.ExpiresAt != nil && !t.ExpiresAt.After(now)) {
		return nil, unauth
	}
	u := t.Edges.User
	if !u.Superadmin && t.TenantID != u.TenantID {
		return nil, unauth
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		if err := s.Ent.APIToken.UpdateOneID(t.ID).SetLastUsedAt(now).Exec(sys); err != nil {
			s.Log.Warn("recording session use", "token", t.ID, "err", err)
		}
	}
	return &viewer.Viewer{
		UserID:        u.ID,
		TenantID:      t.TenantID,
		EnvironmentID: t.EnvironmentID,
		Admin:         u.Role == user.RoleAdmin || (u.Superadmin && t.TenantID != ""),
		Superadmin:    u.Superadmin,
		TokenID:       t.ID,
	}, nil
}

// EndSession revokes a sign-in token (signing out of the dashboard).
func (s *Service) EndSession(ctx context.Context, tokenID string) error {
	sys := viewer.SystemContext(ctx)
	err := s.Ent.APIToken.Update().
		Where(apitoken.ID(tokenID), apitoken.KindEQ(apitoken.KindSession), apitoken.RevokedAtIsNil()).
		SetRevokedAt(s.Now()).Exec(sys)
	if err != nil {
		return fmt.Errorf("revoking session token %s: %w", tokenID, err)
	}
	return nil
}

package auth

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/apitoken"
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
	return s.viewerOf(ctx, unauth, apitoken.And(apitoken.ID(tokenID), apitoken.KindEQ(apitoken.KindSession)))
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
	s.TokensEnded(ctx, tokenID)
	return nil
}

// SignOut ends the session whose token authenticates ctx's request, through
// the viewer's own privacy rules (a user ends only their own tokens). It is
// false, and changes nothing, when the request came with an API token or a
// session already ended: API tokens are revoked by name, on purpose, so a
// script signing out cannot lose its long-lived credential by mistake.
func (s *Service) SignOut(ctx context.Context) (bool, error) {
	v := viewer.FromContext(ctx)
	if v == nil || v.TokenID == "" {
		return false, fault.New(fault.Unauthenticated, "not signed in")
	}
	n, err := s.Ent.APIToken.Update().
		Where(apitoken.ID(v.TokenID), apitoken.KindEQ(apitoken.KindSession), apitoken.RevokedAtIsNil()).
		SetRevokedAt(s.Now()).Save(ctx)
	if err != nil {
		return false, fmt.Errorf("ending session %s: %w", v.TokenID, err)
	}
	if n == 0 {
		return false, nil
	}
	s.TokensEnded(ctx, v.TokenID)
	return true, nil
}

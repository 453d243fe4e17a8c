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

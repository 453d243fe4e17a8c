package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Invite lifetimes.
const (
	DefaultInviteTTL = 24 * time.Hour
	MaxInviteTTL     = 30 * 24 * time.Hour
)

// CreateInvite makes a single-use invite and returns its code, which is
// not stored and cannot be shown again. Tenant admins only (ent policy).
func (s *Service) CreateInvite(ctx context.Context, nodeName string, ttl time.Duration) (string, *ent.NodeInvite, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || !v.Admin {
		return "", nil, fault.New(fault.Forbidden, "only tenant admins invite nodes")
	}
	if ttl == 0 {
		ttl = DefaultInviteTTL
	}
	if ttl < time.Minute || ttl > MaxInviteTTL {
		return "", nil, fault.Invalid("expiresInSeconds", "must be between 60 and %d", int(MaxInviteTTL.Seconds()))
	}
	code, hash := auth.NewSecret()
	inv, err := s.Ent.NodeInvite.Create().
		SetCodeHash(hash).
		SetNodeName(nodeName).
		SetCreatedByID(v.UserID).
		SetExpiresAt(s.Now().Add(ttl)).
		Save(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("storing invite: %w", err)
	}
	return code, inv, nil
}

// JoinCommand is what an operator runs on the machine to join it.
func (s *Service) JoinCommand(code string) string {
	return fmt.Sprintf("levers9 agent join --server %s --invite %s", s.PublicURL, code)
}

// RevokeInvite makes an unused invite unusable.
func (s *Service) RevokeInvite(ctx context.Context, id string) (*ent.NodeInvite, error) {
	inv, err := s.Ent.NodeInvite.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if inv.UsedAt != nil {
		return nil, fault.Invalid("id", "invite %s was used already; remove the node instead", id)
	}
	if inv.RevokedAt != nil {
		return inv, nil
	}
	return inv.Update().SetRevokedAt(s.Now()).Save(ctx)
}

// CreateServerInvite makes a single-use invite the server gives itself, for
// its built-in node to join tenantID: no admin asks for it, so it is made
// under the system viewer and recorded as created by "system". It returns
// the code, which is not stored.
func (s *Service) CreateServerInvite(ctx context.Context, tenantID, nodeName string, ttl time.Duration) (string, error) {
	if err := CheckInviteName(nodeName); err != nil {
		return "", err
	}
	code, hash := auth.NewSecret()
	err := s.Ent.NodeInvite.Create().
		SetTenantID(tenantID).
		SetCodeHash(hash).
		SetNodeName(nodeName).
		SetCreatedByID("system").
		SetExpiresAt(s.Now().Add(ttl)).
		Exec(viewer.SystemContext(ctx))
	if err != nil {
		return "", fmt.Errorf("storing the server's invite: %w", err)
	}
	return code, nil
}

package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/nodes/nodename"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// RefusalCode says why an agent's request was refused. The codes reach the
// agent (the join endpoint's "code"), so they never change meaning.
type RefusalCode string

// The refusals of the join exchange and of an agent's hello.
const (
	BadRequest    RefusalCode = "BAD_REQUEST"
	BadInventory  RefusalCode = "BAD_INVENTORY"
	BadName       RefusalCode = "BAD_NAME"
	NameTaken     RefusalCode = "NAME_TAKEN"
	InviteUnknown RefusalCode = "INVITE_UNKNOWN"
	InviteRevoked RefusalCode = "INVITE_REVOKED"
	InviteUsed    RefusalCode = "INVITE_USED"
	InviteExpired RefusalCode = "INVITE_EXPIRED"
)

// Refusal is an agent's request the node rules refuse: nothing was written,
// and the message is safe to show to whoever runs the agent.
type Refusal struct {
	Code    RefusalCode
	Message string
}

func (r *Refusal) Error() string { return r.Message }

func refuse(code RefusalCode, format string, a ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, a...)}
}

// maxAgentVersion bounds the agent version stored with a node.
const maxAgentVersion = 128

// Join exchanges an invite code for a new node of the invite's tenant, in
// its default queue, and returns the node's credential (only its hash is
// kept). The node is offline until its agent connects. A refused join
// (a *Refusal) writes nothing; an invite is used once even when two agents
// race for it.
func (s *Service) Join(ctx context.Context, req wire.JoinRequest) (wire.JoinResponse, error) {
	sys := viewer.SystemContext(ctx)
	capacity := fromWire(req.Inventory)
	if strings.TrimSpace(req.Invite) == "" {
		return wire.JoinResponse{}, refuse(BadRequest, "an invite code is required")
	}
	if err := checkInventory(capacity); err != nil {
		return wire.JoinResponse{}, err
	}
	var res wire.JoinResponse
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		inv, err := tx.Ent.NodeInvite.Query().Where(nodeinvite.CodeHash(auth.HashSecret(req.Invite))).Only(sys)
		if ent.IsNotFound(err) {
			return refuse(InviteUnknown, "unknown invite code")
		}
		if err != nil {
			return fmt.Errorf("finding invite: %w", err)
		}
		now := s.Now()
		switch InviteState(inv, now) {
		case "revoked":
			return refuse(InviteRevoked, "this invite was revoked")
		case "used":
			return refuse(InviteUsed, "this invite was used already; ask for a new one")
		case "expired":
			return refuse(InviteExpired, "this invite expired at %s", inv.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		name := firstNonEmpty(req.Name, inv.NodeName, req.Hostname)
		if !nodename.Valid(name) {
			return refuse(BadName, "node name %.70q must be 1-63 letters, digits, '.', '_' or '-'", name)
		}
		secret, hash := auth.NewSecret()
		n, err := tx.Ent.Node.Create().
			SetTenantID(inv.TenantID).SetName(name).SetStatus(node.StatusOffline).
			SetInventory(capacity).SetCredentialHash(hash).SetAgentVersion(truncate(req.AgentVersion, maxAgentVersion)).
			Save(sys)
		if ent.IsConstraintError(err) {
			return refuse(NameTaken, "a node named %q exists in this tenant; choose another with --name", name)
		}
		if err != nil {
			return fmt.Errorf("creating node: %w", err)
		}
		// Conditional, so two agents racing for one invite cannot both win.
		used, err := tx.Ent.NodeInvite.Update().
			Where(nodeinvite.ID(inv.ID), nodeinvite.UsedAtIsNil(), nodeinvite.RevokedAtIsNil()).
			SetUsedAt(now).SetNodeID(n.ID).Save(sys)
		if err != nil {
			return fmt.Errorf("marking invite used: %w", err)
		}
		if used == 0 {
			return refuse(InviteUsed, "this invite was used already; ask for a new one")
		}
		err = tx.Ent.Queue.Update().
			Where(queue.TenantID(inv.TenantID), queue.Name(tenancy.DefaultQueue)).
			AddNodeIDs(n.ID).Exec(sys)
		if err != nil {
			return fmt.Errorf("adding node to the default queue: %w", err)
		}
		res = wire.JoinResponse{NodeID: n.ID, Name: n.Name, Credential: secret}
		return nil
	})
	if err != nil {
		return wire.JoinResponse{}, err
	}
	return res, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// truncate cuts s to n bytes, for values stored as the agent sent them.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

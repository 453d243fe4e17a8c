package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/nodes/nodename"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// joinError is a refused join: an HTTP status and a stable code.
type joinError struct {
	status int
	code   string
	msg    string
}

func (e *joinError) Error() string { return e.msg }

// maxJoinBody bounds the join request; an inventory is small.
const maxJoinBody = 64 << 10

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	var req wire.JoinRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJoinBody))
	if err := dec.Decode(&req); err != nil {
		refuse(w, http.StatusBadRequest, "BAD_REQUEST", "the body must be JSON: {invite, name, inventory}")
		return
	}
	res, err := s.Join(r.Context(), req)
	var je *joinError
	switch {
	case errors.As(err, &je):
		s.Log.Info("node join refused", "code", je.code, "reason", je.msg, "remote", r.RemoteAddr)
		refuse(w, je.status, je.code, je.msg)
	case err != nil:
		s.Log.Error("node join failed", "err", err)
		refuse(w, http.StatusInternalServerError, "INTERNAL", "the join failed; try again")
	default:
		s.Log.Info("node joined", "node", res.NodeID, "name", res.Name)
		writeJSON(w, http.StatusOK, res)
	}
}

// Join exchanges an invite code for a new node and its credential. A
// refused join writes nothing.
func (s *Server) Join(ctx context.Context, req wire.JoinRequest) (*wire.JoinResponse, error) {
	sys := viewer.SystemContext(ctx)
	capacity := toInventory(req.Inventory)
	if strings.TrimSpace(req.Invite) == "" {
		return nil, &joinError{http.StatusBadRequest, "BAD_REQUEST", "an invite code is required"}
	}
	if err := checkInventory(capacity); err != nil {
		return nil, &joinError{http.StatusBadRequest, "BAD_INVENTORY", err.Error()}
	}
	var res *wire.JoinResponse
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		inv, err := tx.Ent.NodeInvite.Query().Where(nodeinvite.CodeHash(auth.HashSecret(req.Invite))).Only(sys)
		if ent.IsNotFound(err) {
			return &joinError{http.StatusUnauthorized, "INVITE_UNKNOWN", "unknown invite code"}
		}
		if err != nil {
			return fmt.Errorf("finding invite: %w", err)
		}
		now := s.now()
		switch {
		case inv.RevokedAt != nil:
			return &joinError{http.StatusForbidden, "INVITE_REVOKED", "this invite was revoked"}
		case inv.UsedAt != nil:
			return &joinError{http.StatusConflict, "INVITE_USED", "this invite was used already; ask for a new one"}
		case !now.Before(inv.ExpiresAt):
			return &joinError{http.StatusGone, "INVITE_EXPIRED", "this invite expired at " + inv.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")}
		}
		name := firstNonEmpty(req.Name, inv.NodeName, req.Hostname)
		if !nodename.Valid(name) {
			return &joinError{http.StatusBadRequest, "BAD_NAME", fmt.Sprintf("node name %.70q must be 1-63 letters, digits, '.', '_' or '-'", name)}
		}
		secret, hash := auth.NewSecret()
		n, err := tx.Ent.Node.Create().
			SetTenantID(inv.TenantID).SetName(name).SetStatus(node.StatusOffline).
			SetInventory(capacity).SetCredentialHash(hash).SetAgentVersion(clip(req.AgentVersion, 128)).
			Save(sys)
		if ent.IsConstraintError(err) {
			return &joinError{http.StatusConflict, "NAME_TAKEN", fmt.Sprintf("a node named %q exists in this tenant; choose another with --name", name)}
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
			return &joinError{http.StatusConflict, "INVITE_USED", "this invite was used already; ask for a new one"}
		}
		err = tx.Ent.Queue.Update().
			Where(queue.TenantID(inv.TenantID), queue.Name(tenancy.DefaultQueue)).
			AddNodeIDs(n.ID).Exec(sys)
		if err != nil {
			return fmt.Errorf("adding node to the default queue: %w", err)
		}
		res = &wire.JoinResponse{NodeID: n.ID, Name: n.Name, Credential: secret}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func checkInventory(inv inventory.Inventory) error {
	if inv.CPUs < 0 || inv.CPUs > 1<<16 {
		return fmt.Errorf("inventory.cpus %v is out of range", inv.CPUs)
	}
	if inv.MemoryMiB < 0 || inv.MemoryMiB > 1<<40 {
		return fmt.Errorf("inventory.memoryMiB %d is out of range", inv.MemoryMiB)
	}
	if len(inv.GPUs) > 64 {
		return errors.New("inventory.gpus: at most 64 GPU types")
	}
	for _, g := range inv.GPUs {
		if g.Type == "" || len(g.Type) > 64 || g.Count < 0 || g.Count > 1024 {
			return fmt.Errorf("inventory.gpus: %.64q × %d is not a valid GPU entry", g.Type, g.Count)
		}
	}
	return nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

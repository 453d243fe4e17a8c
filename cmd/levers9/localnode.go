package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/viewer"
)

// localNodeName is the name of the built-in node.
const localNodeName = "local"

// loopbackURL is how the built-in node reaches its own server: the listen
// address, with a wildcard host replaced by loopback.
func loopbackURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}).String()
}

// runLocalNode runs the built-in node: an in-process agent on the runtime
// rt makes, joined to this server over loopback the first time (with an
// invite the server makes itself) and reconnecting afterwards.
func runLocalNode(ctx context.Context, db *database.DB, serverURL, dataDir, tenantSlug string, rt *localRuntime, log *slog.Logger) error {
	stateDir := filepath.Join(dataDir, "node")
	if _, err := agent.LoadState(stateDir); errors.Is(err, agent.ErrNotJoined) {
		if err := joinLocalNode(ctx, db, serverURL, stateDir, tenantSlug, log); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	err := rt.serve(ctx, stateDir, serverURL, log)
	if !errors.Is(err, agent.ErrCredentialRefused) {
		return err
	}
	// The database was replaced under a kept data directory: the node
	// is unknown there, so it joins afresh.
	log.Warn("local node credential refused; joining again")
	if err := os.Remove(filepath.Join(stateDir, agent.StateFile)); err != nil {
		return fmt.Errorf("forgetting the old local node: %w", err)
	}
	if err := joinLocalNode(ctx, db, serverURL, stateDir, tenantSlug, log); err != nil {
		return err
	}
	return rt.serve(ctx, stateDir, serverURL, log)
}

func joinLocalNode(ctx context.Context, db *database.DB, serverURL, stateDir, tenantSlug string, log *slog.Logger) error {
	sys := viewer.SystemContext(ctx)
	if tenantSlug == "" {
		tenantSlug = "default"
	}
	t, err := db.Ent.Tenant.Query().Where(tenant.Slug(tenantSlug)).Only(sys)
	if ent.IsNotFound(err) {
		t, err = db.Ent.Tenant.Query().Order(ent.Asc(tenant.FieldCreatedAt)).First(sys)
	}
	if err != nil {
		return fmt.Errorf("finding the tenant of the local node: %w", err)
	}
	invites := &nodes.Service{Ent: db.Ent, Now: time.Now}
	name := localNodeName
	for attempt := 0; ; attempt++ {
		code, err := invites.CreateServerInvite(ctx, t.ID, name, 10*time.Minute)
		if err != nil {
			return fmt.Errorf("inviting the local node: %w", err)
		}
		st, err := agent.Join(ctx, agent.JoinConfig{
			Server: serverURL, Invite: code, StateDir: stateDir,
			Inventory: agent.DetectInventory(ctx), Version: version,
		})
		if err == nil {
			log.Info("local node joined", "node", st.NodeID, "tenant", t.Slug)
			return nil
		}
		// A node of that name exists (its state directory was removed):
		// take another name rather than refuse to start.
		if attempt < 3 {
			log.Warn("local node join refused; retrying with another name", "err", err)
			name = fmt.Sprintf("%s-%d", localNodeName, time.Now().Unix()%100000+int64(attempt))
			continue
		}
		return err
	}
}

// localNodeID returns the ID of the built-in node ("" before it joined, nil
// when there is none): jobs on it link the server's local buckets. The
// state file is read each time (only for jobs with mounts), so a node that
// joined again is recognised.
func localNodeID(enabled bool, dataDir string) func() string {
	if !enabled {
		return nil
	}
	return func() string {
		st, err := agent.LoadState(filepath.Join(dataDir, "node"))
		if err != nil {
			return ""
		}
		return st.NodeID
	}
}

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/levers9/levers9/internal/wire"
)

// JoinConfig is what joining needs.
type JoinConfig struct {
	Server    string // the server's URL
	Invite    string // the invite code
	Name      string // node name; empty: the invite's, else the host name
	StateDir  string
	Inventory wire.Inventory    // as reported: Declared applied to what was detected
	Declared  Declared          // kept in the state for later starts
	Flags     map[string]string // kept in the state for later starts (State.Flags)
	Version   string
	Client    *http.Client // nil: http.DefaultClient
}

// Join exchanges an invite for a node identity and stores it in the state
// directory. It refuses to overwrite an existing identity.
func Join(ctx context.Context, cfg JoinConfig) (*State, error) {
	if _, err := LoadState(cfg.StateDir); err == nil {
		return nil, fmt.Errorf("%s already holds a node identity; use `levers9 agent` to reconnect, or another --state-dir", cfg.StateDir)
	}
	server := strings.TrimRight(cfg.Server, "/")
	if server == "" || cfg.Invite == "" {
		return nil, fmt.Errorf("joining needs --server and --invite")
	}
	host, _ := os.Hostname()
	body, err := json.Marshal(wire.JoinRequest{
		Invite: cfg.Invite, Name: cfg.Name, Hostname: sanitizeName(host),
		AgentVersion: cfg.Version, Inventory: cfg.Inventory,
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/agent/join", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("joining %s: %w", server, err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := cfg.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("joining %s: %w", server, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("join refused: %s", e.Error)
		}
		return nil, fmt.Errorf("join refused: %s", resp.Status)
	}
	var jr wire.JoinResponse
	if err := json.Unmarshal(b, &jr); err != nil || jr.NodeID == "" || jr.Credential == "" {
		return nil, fmt.Errorf("joining %s: unexpected answer", server)
	}
	st := &State{Server: server, NodeID: jr.NodeID, Name: jr.Name, Credential: jr.Credential, Declared: cfg.Declared, Flags: cfg.Flags}
	if err := SaveState(cfg.StateDir, st); err != nil {
		return nil, err
	}
	return st, nil
}

// sanitizeName makes a host name a valid node name.
func sanitizeName(h string) string {
	h, _, _ = strings.Cut(h, ".")
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-_")
}

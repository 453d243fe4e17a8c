// Package agent is the node agent: it joins a server with an invite, keeps
// an outbound WebSocket tunnel to it, runs the jobs it is sent through a
// runtime and reports their states and output. It shares only the wire
// package with the server.
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/levers9/levers9/internal/wire"
)

// StateFile is the file in the state directory that holds the node's
// identity.
const StateFile = "node.json"

// State is what a joined node keeps: where its server is and how it proves
// who it is. The credential is a secret: the file is mode 0600.
type State struct {
	Server     string `json:"server"`
	NodeID     string `json:"nodeId"`
	Name       string `json:"name,omitempty"`
	Credential string `json:"credential"`
	// Declared are the resources given with flags at join time or on a
	// later start; they win over detected ones on every later start.
	Declared Declared `json:"declared,omitzero"`
	// Flags are the agent's other settings given at join time or on a
	// later start (the runtime, its image, work directory and job uids…),
	// by flag name, as the flag prints its value. A restarted agent must
	// run the node as it was joined, not with the defaults: a node joined
	// with the process runtime and declared GPUs came back as Docker.
	// Absent in files written before they were kept: the defaults apply.
	Flags map[string]string `json:"flags,omitempty"`
}

// Declared resources; zero values mean "detect".
type Declared struct {
	CPUs      float64    `json:"cpus,omitempty"`
	MemoryMiB int64      `json:"memoryMiB,omitempty"`
	GPUs      []wire.GPU `json:"gpus,omitempty"`
}

// Apply returns detected with the declared values in place.
func (d Declared) Apply(detected wire.Inventory) wire.Inventory {
	if d.CPUs > 0 {
		detected.CPUs = d.CPUs
	}
	if d.MemoryMiB > 0 {
		detected.MemoryMiB = d.MemoryMiB
	}
	if len(d.GPUs) > 0 {
		detected.GPUs = d.GPUs
	}
	return detected
}

// Merge returns d with the values set in o in place.
func (d Declared) Merge(o Declared) Declared {
	if o.CPUs > 0 {
		d.CPUs = o.CPUs
	}
	if o.MemoryMiB > 0 {
		d.MemoryMiB = o.MemoryMiB
	}
	if len(o.GPUs) > 0 {
		d.GPUs = o.GPUs
	}
	return d
}

// ErrNotJoined means the state directory holds no node identity.
var ErrNotJoined = errors.New("this machine has not joined a server yet: run `levers9 agent join --server URL --invite CODE`")

// LoadState reads the state in dir.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotJoined
	}
	if err != nil {
		return nil, fmt.Errorf("reading node state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reading node state %s: %w", filepath.Join(dir, StateFile), err)
	}
	if st.Server == "" || st.NodeID == "" || st.Credential == "" {
		return nil, fmt.Errorf("node state %s is incomplete; join again", filepath.Join(dir, StateFile))
	}
	return &st, nil
}

// SaveState writes st to dir atomically, readable by the owner only.
func SaveState(dir string, st *State) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".node-*.json")
	if err != nil {
		return fmt.Errorf("writing node state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("writing node state: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing node state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing node state: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("writing node state: %w", err)
	}
	return nil
}

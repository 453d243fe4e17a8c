package wire

// JoinRequest is the body of POST /agent/join: an agent exchanging an
// invite code for a node identity. It travels over plain HTTPS before the
// tunnel exists, so it has no envelope.
type JoinRequest struct {
	Invite       string    `json:"invite"`
	Name         string    `json:"name,omitempty"`
	Hostname     string    `json:"hostname,omitempty"` // the fallback name
	AgentVersion string    `json:"agentVersion,omitempty"`
	Inventory    Inventory `json:"inventory"`
}

// JoinResponse is the answer to a successful join. The credential is shown
// only here; the server keeps its hash.
type JoinResponse struct {
	NodeID     string `json:"nodeId"`
	Name       string `json:"name"`
	Credential string `json:"credential"`
}

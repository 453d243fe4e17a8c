package tunnel

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/wire"
)

// maxJoinBody bounds the join request; an inventory is small.
const maxJoinBody = 64 << 10

// refusalStatus is the HTTP status of each refused join.
var refusalStatus = map[nodes.RefusalCode]int{
	nodes.BadRequest:    http.StatusBadRequest,
	nodes.BadInventory:  http.StatusBadRequest,
	nodes.BadName:       http.StatusBadRequest,
	nodes.NameTaken:     http.StatusConflict,
	nodes.InviteUnknown: http.StatusUnauthorized,
	nodes.InviteRevoked: http.StatusForbidden,
	nodes.InviteUsed:    http.StatusConflict,
	nodes.InviteExpired: http.StatusGone,
}

// join carries POST /agent/join to the join exchange (nodes.Service.Join).
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	var req wire.JoinRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJoinBody))
	if err := dec.Decode(&req); err != nil {
		refuse(w, http.StatusBadRequest, string(nodes.BadRequest), "the body must be JSON: {invite, name, inventory}")
		return
	}
	res, err := s.Nodes.Join(r.Context(), req)
	var no *nodes.Refusal
	switch {
	case errors.As(err, &no):
		status, ok := refusalStatus[no.Code]
		if !ok {
			status = http.StatusBadRequest
		}
		s.Log.Info("node join refused", "code", no.Code, "reason", no.Message, "remote", r.RemoteAddr)
		refuse(w, status, string(no.Code), no.Message)
	case err != nil:
		s.Log.Error("node join failed", "err", err)
		refuse(w, http.StatusInternalServerError, "INTERNAL", "the join failed; try again")
	default:
		s.Log.Info("node joined", "node", res.NodeID, "name", res.Name)
		writeJSON(w, http.StatusOK, res)
	}
}

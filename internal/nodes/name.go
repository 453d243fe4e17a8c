package nodes

import (
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/nodes/nodename"
)

// The rule itself is nodename's, the one ent's schema and the join handler
// check too, so an invite never names a node that cannot join under that name.
const nameRule = "a node name is 1 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit"

// CheckInviteName reports whether name may be given to an invite: empty
// (the node then joins under its host name) or a valid node name.
func CheckInviteName(name string) error {
	if name != "" && !nodename.Valid(name) {
		return fault.Invalid("nodeName", nameRule)
	}
	return nil
}

// checkName reports whether an admin may rename a node to name.
func checkName(name string) error {
	if !nodename.Valid(name) {
		return fault.Invalid("name", nameRule)
	}
	return nil
}

package nodes

import (
	"regexp"

	"github.com/levers9/levers9/internal/fault"
)

// namePattern is the rule node names follow (ent's schema and the join
// handler check the same), so an invite never names a node that cannot
// join under that name.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

const nameRule = "a node name is 1 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit"

// CheckInviteName reports whether name may be given to an invite: empty
// (the node then joins under its host name) or a valid node name.
func CheckInviteName(name string) error {
	if name != "" && !namePattern.MatchString(name) {
		return fault.Invalid("nodeName", nameRule)
	}
	return nil
}

// checkName reports whether an admin may rename a node to name.
func checkName(name string) error {
	if !namePattern.MatchString(name) {
		return fault.Invalid("name", nameRule)
	}
	return nil
}

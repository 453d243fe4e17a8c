package runtime

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// jobUser is the account services run as.
type jobUser struct {
	name     string // "" when given as a bare uid with no passwd entry
	uid, gid uint32
	pooled   bool // a uid of ProcessConfig.UIDs, this job's alone
}

// lookupUser resolves a user name or uid[:gid]. A uid without a gid takes
// the account's primary group, else the group of the same number.
func lookupUser(spec string) (*jobUser, error) {
	name, group, hasGroup := strings.Cut(spec, ":")
	u := &jobUser{}
	if uid, err := strconv.ParseUint(name, 10, 32); err == nil {
		u.uid, u.gid = uint32(uid), uint32(uid)
		if acct, err := user.LookupId(name); err == nil {
			u.name = acct.Username
			if g, err := strconv.ParseUint(acct.Gid, 10, 32); err == nil {
				u.gid = uint32(g)
			}
		}
	} else {
		acct, err := user.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("job user %q: %w", spec, err)
		}
		uid, err1 := strconv.ParseUint(acct.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(acct.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("job user %q: not a numeric uid/gid (%s:%s)", spec, acct.Uid, acct.Gid)
		}
		u.name, u.uid, u.gid = acct.Username, uint32(uid), uint32(gid)
	}
	if hasGroup {
		gid, err := strconv.ParseUint(group, 10, 32)
		if err != nil {
			g, lerr := user.LookupGroup(group)
			if lerr != nil {
				return nil, fmt.Errorf("job user %q: group: %w", spec, lerr)
			}
			if gid, err = strconv.ParseUint(g.Gid, 10, 32); err != nil {
				return nil, fmt.Errorf("job user %q: group %s has no numeric gid", spec, group)
			}
		}
		u.gid = uint32(gid)
	}
	if u.uid == 0 {
		return nil, fmt.Errorf("job user %q is root: name an unprivileged user, or leave it empty to run jobs as the agent's user", spec)
	}
	// Switching to another user takes root (CAP_SETUID, and the working
	// directories are chowned to it).
	if self := uint32(os.Geteuid()); self != 0 && self != u.uid {
		return nil, fmt.Errorf("job user %q: running jobs as another user needs the agent to run as root", spec)
	}
	return u, nil
}

// String names the user for messages.
func (u *jobUser) String() string {
	if u.name != "" {
		return u.name
	}
	return strconv.FormatUint(uint64(u.uid), 10)
}

//go:build !linux

package runtime

import (
	"errors"
	"os"
	"time"
)

// A uid per job needs Linux (/proc, open file description locks).
var errUIDsLinuxOnly = errors.New("a uid per job needs Linux")

func uidsSupported() error                    { return errUIDsLinuxOnly }
func lockUID(*os.File, uint32) (bool, error)  { return false, errUIDsLinuxOnly }
func unlockUID(*os.File, uint32) error        { return errUIDsLinuxOnly }
func ownerAt(*os.File, string) (uint32, bool) { return 0, false }
func killUIDs(_, _ map[uint32]bool, _ time.Time) (stuck, seen map[uint32]bool, err error) {
	return nil, nil, errUIDsLinuxOnly
}

type dirStamp struct{}

func stampFile(*os.File) (dirStamp, bool) { return dirStamp{}, false }
func stampPath(string) (dirStamp, bool)   { return dirStamp{}, false }

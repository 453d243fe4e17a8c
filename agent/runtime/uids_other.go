//go:build !linux

package runtime

import (
	"errors"
	"os"
	"time"
)

// A uid per job needs Linux (/proc, open file description locks).
var errUIDsLinuxOnly = errors.New("a uid per job needs Linux")

func uidsSupported() error                   { return errUIDsLinuxOnly }
func lockUID(*os.File, uint32) (bool, error) { return false, errUIDsLinuxOnly }
func unlockUID(*os.File, uint32) error       { return errUIDsLinuxOnly }
func processUIDs() map[uint32]bool           { return nil }
func killUID(uint32, time.Time) error        { return errUIDsLinuxOnly }
func fileOwner(string) (uint32, bool)        { return 0, false }

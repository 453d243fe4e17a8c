package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameat moves name in directory from to newName in directory to.
func renameat(from *os.File, name string, to *os.File, newName string) error {
	if err := unix.Renameat(int(from.Fd()), name, int(to.Fd()), newName); err != nil {
		return &os.LinkError{Op: "renameat", Old: name, New: newName, Err: err}
	}
	return nil
}

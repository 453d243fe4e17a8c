//go:build !linux

package supervise

import (
	"errors"
	"syscall"
	"time"
)

// Without /proc the runtime knows no process's start time: pid files of
// an earlier agent are not trusted, so nothing is killed by pid.
func ProcessStart(int) uint64 { return 0 }

// Descendants needs /proc.
func Descendants(int) []int { return nil }

func KillTree(pid, pgid int, _ time.Time) error {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

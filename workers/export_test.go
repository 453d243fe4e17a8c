package workers

import "time"

// ForgetPasses drops what rc remembers of waiting passes.
func ForgetPasses(rc *Clients) {
	rc.passes.mu.Lock()
	defer rc.passes.mu.Unlock()
	rc.passes.window = nil
}

// SetClock makes rc read backup windows from clock.
func SetClock(rc *Clients, clock func() time.Time) { rc.clock = clock }

// BackupAt is when the backup pass of a change made at t starts.
func BackupAt(t time.Time) time.Time { return backupAt(backupWindow(t)) }

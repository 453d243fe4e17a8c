package workers

import (
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A change's backup pass is the pass of its window: the BackupDelay-long
// span of time the change was made in (backupWindow). Every change of a
// window asks for the same pass (its window is in the pass's unique
// arguments), which starts BackupDelay after the window ends (backupAt):
// at least BackupDelay after any change of the window, so a transaction
// that asks for it commits before it starts, and it is never running
// while its window lasts. Under load a queue has one backup pass every
// BackupDelay, however many changes, and writes its row about twice.
func backupWindow(now time.Time) int64 { return now.UnixNano() / int64(BackupDelay) }

// backupAt is when the pass of window w starts.
func backupAt(w int64) time.Time { return time.Unix(0, (w+2)*int64(BackupDelay)) }

// pendingPasses remembers, per queue, the window whose backup pass is
// known to be committed and waiting: a later change of that window need
// not write the pass row again (under load that write was a River insert
// per submission and per end, all on one row). Only a pass River reported
// as a duplicate, waiting for its time, is remembered: its row is
// committed (PostgreSQL makes a conflicting insert wait for the first
// one's commit; SQLite has one writer), whatever becomes of the
// transaction that saw it.
type pendingPasses struct {
	mu     sync.Mutex
	window map[string]int64 // queue ID → the window of its waiting pass
}

// covers reports whether the pass of window w over queueID is known to be
// waiting.
func (p *pendingPasses) covers(queueID string, w int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	known, ok := p.window[queueID]
	return ok && known == w
}

// passesKept is how many queues' passes are remembered before those of
// past windows are swept: queues no longer written to (or deleted) would
// otherwise stay in memory.
const passesKept = 256

// saw records what River returned for the insert of the pass of window w
// over queueID.
func (p *pendingPasses) saw(queueID string, w int64, res *rivertype.JobInsertResult) {
	if !res.UniqueSkippedAsDuplicate || res.Job.State != rivertype.JobStateScheduled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.window == nil {
		p.window = map[string]int64{}
	}
	if len(p.window) >= passesKept {
		for q, known := range p.window {
			if known < w {
				delete(p.window, q)
			}
		}
	}
	p.window[queueID] = w
}

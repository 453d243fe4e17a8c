package workers

import (
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// pendingPasses remembers, per queue, the backup pass (ScheduleQueueArgs)
// known to be committed and waiting for its time. A change committed
// before that time is seen by that pass, so its transaction need not
// write the pass row again: under load that write is two River inserts
// per job (submitted, ended), all on one row. Only a pass River reported as
// a duplicate is remembered: its row is committed (PostgreSQL makes a
// conflicting insert wait for the first one's commit; SQLite has one
// writer), whatever becomes of the transaction that saw it.
type pendingPasses struct {
	mu    sync.Mutex
	until map[string]time.Time // queue ID → the waiting pass's start
}

// passMargin is how long before its time a remembered pass is no longer
// relied on: the rest of the transaction must commit before the pass can
// start, and River compares the time with its own clock.
const passMargin = time.Second

// covers reports whether a remembered pass over queueID will start after
// a transaction that asks at now commits.
func (p *pendingPasses) covers(queueID string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.until[queueID]
	if ok && !at.After(now.Add(passMargin)) {
		delete(p.until, queueID)
		return false
	}
	return ok
}

// passesKept is how many queues' passes are remembered before those past
// their time are swept: queues no longer written to (or deleted) would
// otherwise stay in memory.
const passesKept = 256

// saw records, at now, a pass over queueID River returned for an insert.
func (p *pendingPasses) saw(queueID string, res *rivertype.JobInsertResult, now time.Time) {
	if !res.UniqueSkippedAsDuplicate || res.Job.State != rivertype.JobStateScheduled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = map[string]time.Time{}
	}
	if len(p.until) >= passesKept {
		for q, at := range p.until {
			if !at.After(now) {
				delete(p.until, q)
			}
		}
	}
	p.until[queueID] = res.Job.ScheduledAt
}

package runtime

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// batchGather is how long the releaser waits for more uids to come back
// before it cleans them, while enough clean ones are ready: jobs that end
// close together share one walk of /proc and of the scratch folders (a
// busy /tmp changes too often for its listing to be kept). Escaped
// processes of a job live that much longer, as their uid stays taken.
const batchGather = 100 * time.Millisecond

// killDeadline bounds how long a batch waits for processes of a uid
// given back to die after SIGKILL; a uid whose processes survive stays
// taken.
const killDeadline = 30 * time.Second

// acquire takes the lowest clean uid. With none ready it waits for the
// next batch, which also checks fresh uids of the range (not held by
// another runtime, no process running as them) and deletes what an
// earlier job of theirs left (its agent died); ErrNoFreeUID when that
// batch found none and no uid given back awaits cleaning.
func (p *uidPool) acquire() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if uid, ok := p.takeCleanLocked(); ok {
			return uid, nil
		}
		// A batch that starts from now on looks for fresh uids for us.
		target := p.started + 1
		p.waiting++
		if p.closed {
			p.mu.Unlock()
			p.runBatch()
			p.mu.Lock()
		} else {
			p.kickLocked()
			for p.finished < target {
				p.cond.Wait()
			}
		}
		p.waiting--
		if uid, ok := p.takeCleanLocked(); ok {
			return uid, nil
		}
		if len(p.dirty) == 0 && p.inBatch == 0 {
			return 0, fmt.Errorf("%w: all %d uids of %d-%d belong to running jobs; this node runs at most that many jobs at once", ErrNoFreeUID, p.r.Count, p.r.First, p.r.Last())
		}
		// Uids given back meanwhile are cleaned by the next batch.
	}
}

// takeCleanLocked hands out the lowest clean uid, asking for more ahead
// when the stock runs low.
func (p *uidPool) takeCleanLocked() (uint32, bool) {
	if len(p.clean) == 0 {
		return 0, false
	}
	first := true
	var uid uint32
	for u := range p.clean {
		if first || u < uid {
			uid, first = u, false
		}
	}
	delete(p.clean, uid)
	p.held[uid] = true
	if len(p.clean) < p.stock/4 {
		p.kickLocked()
	}
	return uid, true
}

func (p *uidPool) kickLocked() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// release gives uid back once its job has ended and its working
// directory is deleted. procsGone says the job's cgroups saw every one of
// its processes end (a job's uid cannot leave them), which spares the
// walk of /proc; else whatever still runs as it (a process that escaped
// its service) is killed. What it left in the scratch folders is deleted
// either way, and only then is the uid handed out again. A uid whose
// processes survive SIGKILL stays taken.
func (p *uidPool) release(uid uint32, procsGone bool) {
	p.mu.Lock()
	p.dirty[uid] = p.dirty[uid] || !procsGone
	closed := p.closed
	if !closed {
		p.kickLocked()
	}
	p.mu.Unlock()
	if closed {
		p.runBatch()
	}
}

// close cleans what was given back and stops the releaser; later
// releases are cleaned on the spot.
func (p *uidPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.kickLocked()
	p.mu.Unlock()
	<-p.stopped
}

// releaser runs batches: at once when a job waits for a uid, the ready
// stock runs low or the pool closes; else a moment after the first uid
// comes back, to take along those that follow it.
func (p *uidPool) releaser() {
	defer close(p.stopped)
	var gather *time.Timer
	for {
		<-p.kick
		if !p.urgent() {
			if gather == nil {
				gather = time.NewTimer(batchGather)
			} else {
				gather.Reset(batchGather)
			}
		wait:
			for {
				select {
				case <-gather.C:
					break wait
				case <-p.kick: // another uid back, or someone waits now
					if p.urgent() {
						gather.Stop()
						break wait
					}
				}
			}
		}
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		p.runBatch()
		if closed {
			return
		}
	}
}

func (p *uidPool) urgent() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting > 0 || p.closed || len(p.clean) < p.stock/4
}

// runBatch cleans every uid given back so far, and fresh uids for the
// stock and the acquires that wait: one walk of /proc (only when some
// uid needs it) and one of the scratch folders for all of them.
func (p *uidPool) runBatch() {
	p.batchMu.Lock()
	defer p.batchMu.Unlock()
	p.mu.Lock()
	p.started++
	batch := p.dirty
	p.dirty = map[uint32]bool{}
	p.inBatch = len(batch)
	var fresh []uint32
	if want := p.waiting + p.stock - len(p.clean) - len(batch); want > 0 {
		fresh = p.lockFreshLocked(want)
	}
	hook := p.beforeBatch
	p.mu.Unlock()
	if hook != nil {
		hook()
	}

	kill := map[uint32]bool{}
	for uid, alive := range batch {
		if alive {
			kill[uid] = true
		}
	}
	watch := map[uint32]bool{}
	for _, uid := range fresh {
		watch[uid] = true
	}
	var stuck, seen map[uint32]bool
	if len(kill) > 0 || len(watch) > 0 {
		var err error
		stuck, seen, err = killUIDs(kill, watch, time.Now().Add(killDeadline))
		if err != nil {
			p.log.Error("processes of ended jobs survive; their uids stay taken", "uids", slices.Sorted(maps.Keys(stuck)), "err", err)
		}
	}
	ok := map[uint32]bool{}
	for uid := range batch {
		if !stuck[uid] {
			ok[uid] = true
		}
	}
	for _, uid := range fresh {
		if !seen[uid] {
			ok[uid] = true
		}
	}
	p.removeFilesOf(ok)

	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range batch {
		if !stuck[uid] {
			// Its lock is kept (it goes with this process): the uid stays
			// this runtime's, clean, for a next job.
			delete(p.held, uid)
			p.clean[uid] = true
		}
	}
	for _, uid := range fresh {
		if seen[uid] {
			// Not a job of a live runtime: a stray process, not ours to kill.
			if !p.warned[uid] {
				p.warned[uid] = true
				p.log.Warn("a job uid is skipped: processes run as it", "uid", uid)
			}
			_ = unlockUID(p.locks, uid)
			continue
		}
		p.clean[uid] = true
	}
	p.inBatch = 0
	p.finished++
	p.cond.Broadcast()
}

// lockFreshLocked locks up to n uids of the range, lowest first, that
// neither this runtime nor another holds.
func (p *uidPool) lockFreshLocked(n int) []uint32 {
	var out []uint32
	for i := uint32(0); i < p.r.Count && len(out) < n; i++ {
		uid := p.r.First + i
		if p.held[uid] || p.clean[uid] || p.dirty[uid] {
			continue
		}
		ok, err := lockUID(p.locks, uid)
		if err != nil {
			p.log.Warn("locking a job uid", "uid", uid, "err", err)
			break
		}
		if ok {
			out = append(out, uid)
		}
	}
	return out
}

// scratchSeen is what a listing of a scratch folder found: the folder's
// stamp, taken before it was listed, and the uids of the range that own
// entries in it. While the stamp stays the same, no entry was added,
// removed or renamed there since, and only root changes an entry's owner:
// a uid that owned nothing then owns nothing now, with no need to list
// the folder (thousands of entries in a busy /tmp) again.
type scratchSeen struct {
	stamp  dirStamp
	owners map[uint32]bool
}

// removeFilesOf deletes what the uids own at the top of the scratch
// folders: one listing of each for all of them, none where the folder is
// unchanged since a listing that found none of theirs. Only jobs use the
// range's uids (checkUnused), and none of these has a process. Called by
// one batch at a time.
func (p *uidPool) removeFilesOf(uids map[uint32]bool) {
	if len(uids) == 0 {
		return
	}
	for _, dir := range scratchDirs {
		if seen, ok := p.scratch[dir]; ok {
			if st, ok := stampPath(dir); ok && st == seen.stamp && !anyOf(seen.owners, uids) {
				continue
			}
		}
		delete(p.scratch, dir)
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		st, stable := stampFile(d)
		names, err := d.Readdirnames(-1)
		stable = stable && err == nil
		owners := map[uint32]bool{}
		for _, name := range names {
			owner, ok := ownerAt(d, name)
			switch {
			case !ok:
				stable = false // gone meanwhile, or unknown
			case uids[owner]:
				stable = false
				path := filepath.Join(dir, name)
				if err := os.RemoveAll(path); err != nil {
					p.log.Warn("deleting a job's leftover", "uid", owner, "path", path, "err", err)
				}
			case owner >= p.r.First && owner <= p.r.Last():
				owners[owner] = true
			}
		}
		_ = d.Close()
		if stable {
			p.scratch[dir] = scratchSeen{stamp: st, owners: owners}
		}
	}
}

func anyOf(a, b map[uint32]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

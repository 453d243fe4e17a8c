package joblog

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/logline"
)

// A hub is the one reader of an attempt's new lines on this replica: the
// bus wakes it, it reads what was stored since its last read (one query per
// signal, however many follow) and keeps the recent lines in memory, where
// every follow of the attempt takes them at its own pace. The database
// stays the history: a follow that starts before the hub's window, or falls
// behind it, reads the older lines itself and then joins the window.
type hub struct {
	key    hubKey
	set    *hubSet
	c      *ent.Client
	cancel context.CancelFunc // stops the reader

	mu      sync.Mutex
	subs    int     // follows attached; the reader stops at 0
	start   int64   // the first seq the hub read: below it, follows apply the gap rule themselves
	floor   int64   // lines the hub delivered from floor on are all in lines
	next    int64   // the hub covered every seq below next (delivered or skipped)
	lines   []*Line // delivered lines from floor on, in seq order; never written in place
	bytes   int     // text held in lines
	done    bool    // the attempt is over and every stored line was read
	err     error   // the reader failed; follows end with it
	changed chan struct{}

	encoded atomic.Int64 // bytes of the window's shared encodings (encoded.go)
}

type hubKey struct {
	jobID   string
	attempt int
	// Options that change what the reader does: follows that differ get
	// their own hub (in practice every follow of a server shares them).
	gapWait, poll time.Duration
}

// The window a hub keeps: follows that fall further behind read the
// database. Lines may be 64 KiB: the byte bound keeps the worst case small.
const windowBytes = 8 << 20

// windowLines is a variable so a test can make it small.
var windowLines atomic.Int64

func init() { windowLines.Store(8192) }

// hubSet is a Service's hubs: an entry lives only while follows are
// attached.
type hubSet struct {
	sync.Mutex
	m       map[hubKey]*hub
	readers int // reader goroutines running
}

// Readers is the number of hub readers of this service still running: one
// per followed attempt, gone shortly after its last follow.
func (s *Service) Readers() int {
	s.hubs.Lock()
	defer s.hubs.Unlock()
	return s.hubs.readers
}

// join attaches a follow to the hub of key, starting one whose reader reads
// as the viewer of ctx (who may see the job: it was just checked) from seq
// fromSeq at the earliest. leave detaches it.
func (s *Service) join(ctx context.Context, key hubKey, fromSeq int64, opts Options) (*hub, error) {
	hubs := &s.hubs
	hubs.Lock()
	if h := hubs.m[key]; h != nil {
		h.mu.Lock()
		h.subs++
		h.mu.Unlock()
		hubs.Unlock()
		return h, nil
	}
	hubs.Unlock()
	// The reader starts past what is stored: older lines are history, which
	// each follow reads itself (once), not the hub on every signal.
	last, err := lastSeq(ctx, s.DB.Ent, key.jobID, key.attempt)
	if err != nil {
		return nil, err
	}
	start := max(fromSeq, last+1, 1)
	hubs.Lock()
	defer hubs.Unlock()
	if h := hubs.m[key]; h != nil { // another follow made it meanwhile
		h.mu.Lock()
		h.subs++
		h.mu.Unlock()
		return h, nil
	}
	log := opts.Log
	// The reader outlives the follow that made it, with its viewer: every
	// follow attached was allowed to see the job, so privacy rules still
	// scope the reads.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hub{key: key, set: hubs, c: s.DB.Ent, cancel: cancel, subs: 1, start: start, floor: start, next: start,
		changed: make(chan struct{})}
	if hubs.m == nil {
		hubs.m = map[hubKey]*hub{}
	}
	hubs.m[key] = h
	hubs.readers++
	// Subscribe before the first read, so no signal falls between them.
	wake, stop := subscribe(s.Bus, key.jobID)
	go func() {
		defer func() {
			hubs.Lock()
			hubs.readers--
			hubs.Unlock()
		}()
		defer stop()
		err := h.run(rctx, wake, opts)
		if err == nil || rctx.Err() != nil {
			return
		}
		log.Error("reading the logs of a job", "job", key.jobID, "err", err)
		// Followers end with the error; later ones start a new reader.
		hubs.Lock()
		if hubs.m[key] == h {
			delete(hubs.m, key)
		}
		hubs.Unlock()
		h.mu.Lock()
		h.err = err
		h.broadcast()
		h.mu.Unlock()
	}()
	return h, nil
}

// leave detaches a follow; the last one stops the reader.
func (h *hub) leave() {
	hubs := h.set
	hubs.Lock()
	defer hubs.Unlock()
	h.mu.Lock()
	h.subs--
	last := h.subs == 0
	h.mu.Unlock()
	if !last {
		return
	}
	if hubs.m[h.key] == h {
		delete(hubs.m, h.key)
	}
	h.cancel()
}

// lastSeq is the highest seq stored for the attempt (0: none).
func lastSeq(ctx context.Context, c *ent.Client, jobID string, attempt int) (int64, error) {
	l, err := c.LogLine.Query().Where(logline.JobID(jobID), logline.Attempt(attempt)).
		Order(ent.Desc(logline.FieldSeq)).Select(logline.FieldSeq).First(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("finding the end of the logs of job %s: %w", jobID, err)
	}
	return l.Seq, nil
}

// broadcast wakes every follow waiting on the hub; h.mu is held.
func (h *hub) broadcast() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// run reads new lines after each signal until the attempt is over.
func (h *hub) run(ctx context.Context, wake <-chan struct{}, opts Options) error {
	var gapSince time.Time
	for {
		// The state before the lines: lines are stored before the
		// attempt's end, so after an end seen here the read finds them all.
		st, err := readJob(ctx, h.c, h.key.jobID)
		if err != nil {
			return err
		}
		ended := st.ended(h.key.attempt)
		held, err := h.drain(ctx, ended, &gapSince, opts)
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.done = ended
		// Every round, even an empty one: a follow replaying history below
		// the hub's start re-reads when the job was signalled.
		h.broadcast()
		h.mu.Unlock()
		if ended {
			return nil
		}
		var retry <-chan time.Time
		if held {
			retry = time.After(min(opts.GapWait/10, time.Second))
		}
		if err := wait(ctx, wake, opts.Poll, retry); err != nil {
			return err
		}
	}
}

// drain reads every stored line from h.next on into the window, holding at
// a gap for GapWait as a single follow does.
func (h *hub) drain(ctx context.Context, ended bool, gapSince *time.Time, opts Options) (held bool, err error) {
	for {
		h.mu.Lock()
		next := h.next
		h.mu.Unlock()
		lines, err := readLines(ctx, h.c, h.key.jobID, h.key.attempt, next, page)
		if err != nil {
			return false, err
		}
		var batch []*Line
		for i := range lines {
			l := &lines[i]
			if l.Seq > next && !ended {
				if gapSince.IsZero() {
					*gapSince = time.Now()
				}
				if time.Since(*gapSince) < opts.GapWait {
					held = true
					break
				}
				opts.Log.Warn("log lines missing; skipping them", "job", h.key.jobID, "from", next, "to", l.Seq-1)
			}
			*gapSince = time.Time{}
			l.shareEncodings(&h.encoded)
			batch = append(batch, l)
			next = l.Seq + 1
		}
		h.publish(batch, next)
		if held || len(lines) < page {
			return held, nil
		}
	}
}

// publish adds lines to the window and trims it; next is what the hub has
// covered.
func (h *hub) publish(lines []*Line, next int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next = next
	if len(lines) == 0 {
		return
	}
	h.lines = append(h.lines, lines...)
	for _, l := range lines {
		h.bytes += len(l.Text)
	}
	drop, most := 0, int(windowLines.Load())
	for len(h.lines)-drop > most || (h.bytes > windowBytes && len(h.lines)-drop > 1) {
		h.bytes -= len(h.lines[drop].Text)
		h.lines[drop].dropEncodings()
		drop++
	}
	if drop > 0 {
		h.floor = h.lines[drop-1].Seq + 1
		// Reslice, never shift: follows may be sending from the old slice.
		h.lines = h.lines[drop:]
	}
	h.broadcast()
}

// view is what a follow sees of the hub at one moment.
type view struct {
	start, floor, next int64
	lines              []*Line // from the follow's seq on
	done               bool
	err                error
	changed            <-chan struct{}
}

func (h *hub) view(from int64) view {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := view{start: h.start, floor: h.floor, next: h.next, done: h.done, err: h.err, changed: h.changed}
	if from >= h.floor {
		i := sort.Search(len(h.lines), func(i int) bool { return h.lines[i].Seq >= from })
		v.lines = h.lines[i:len(h.lines):len(h.lines)]
	}
	return v
}

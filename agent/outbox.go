package agent

import (
	"sync"

	"github.com/levers9/levers9/internal/wire"
)

// The log lines held for the server are bounded in count and bytes. A job
// whose lines do not fit waits (its output pipe fills and its writes block,
// as on a slow terminal) until the server has acknowledged earlier ones:
// nothing it prints is dropped. State changes are always taken (they are
// few and they matter).
const (
	maxQueuedLines = 100_000
	maxQueuedBytes = 32 << 20
)

// item is one report waiting to be sent: a state change or a log line.
type item struct {
	jobID   string
	attempt int
	state   *wire.StateChange
	line    *wire.LogLine
}

// outbox holds reports in order until the server acknowledges them, so
// nothing is lost across reconnects (the server applies resends once).
type outbox struct {
	mu    sync.Mutex
	items []item
	// sent counts the items at the head sent on the current connection;
	// flights are their messages, oldest first, awaiting acks.
	sent    int
	flights []flight
	lines   int
	bytes   int
	room    *sync.Cond // signalled when lines leave or the outbox closes
	closed  bool
	pending map[string]int // job → items not yet sent
	ready   chan struct{}
	onSent  func(jobID string)
}

func newOutbox() *outbox {
	o := &outbox{pending: map[string]int{}, ready: make(chan struct{}, 1)}
	o.room = sync.NewCond(&o.mu)
	return o
}

// push queues it. A log line waits while the outbox is full; it reports
// false only when the outbox was closed meanwhile (the agent is going
// away) and the line was not taken.
func (o *outbox) push(it item) bool {
	o.mu.Lock()
	if it.line != nil {
		// An empty outbox takes any line, so one larger than the byte
		// bound cannot wait forever.
		for !o.closed && o.lines > 0 && (o.lines >= maxQueuedLines || o.bytes+len(it.line.Text) > maxQueuedBytes) {
			o.room.Wait()
		}
		if o.closed {
			o.mu.Unlock()
			return false
		}
		o.lines++
		o.bytes += len(it.line.Text)
	}
	o.items = append(o.items, it)
	o.pending[it.jobID]++
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
	return true
}

// close wakes and refuses every waiting and later line: the agent is
// ending and nobody will send them (a container job's next agent resumes
// its log from the server's copy).
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.room.Broadcast()
	o.mu.Unlock()
}

// flight is one sent message: its sequence number and how many items it
// carried.
type flight struct {
	seq   uint64
	items int
}

// maxFlights bounds the messages awaiting acks.
const maxFlights = 256

// rewind makes every unacknowledged report due again, on a new connection.
func (o *outbox) rewind() {
	o.mu.Lock()
	o.sent, o.flights = 0, nil
	o.mu.Unlock()
}

// next returns the first unsent report and, when it is a log line, the
// lines of the same job right after it (at most max), without removing
// them. It returns nil when nothing is due or too much awaits acks.
func (o *outbox) next(max int) []item {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sent >= len(o.items) || len(o.flights) >= maxFlights {
		return nil
	}
	rest := o.items[o.sent:]
	first := rest[0]
	if first.line == nil {
		return rest[:1:1]
	}
	n := 1
	// Lines of one message must be contiguous; a gap (lines left out over
	// a log quota) starts a new one.
	for n < len(rest) && n < max && rest[n].line != nil && rest[n].jobID == first.jobID && rest[n].attempt == first.attempt &&
		rest[n].line.Seq == rest[n-1].line.Seq+1 {
		n++
	}
	return append([]item(nil), rest[:n]...)
}

// sentAs records that the next n items went out in the message seq.
func (o *outbox) sentAs(seq uint64, n int) {
	o.mu.Lock()
	o.sent += n
	o.flights = append(o.flights, flight{seq: seq, items: n})
	o.mu.Unlock()
}

// acked drops the reports of every message up to seq: the server applies
// messages in order, so an ack covers all before it. Counting and
// dropping are one step under the lock: a rewind in between would send
// the counted reports again and its ack would then count past the end.
func (o *outbox) acked(seq uint64) {
	o.mu.Lock()
	n, k := 0, 0
	for k < len(o.flights) && o.flights[k].seq <= seq {
		n += o.flights[k].items
		k++
	}
	o.flights = o.flights[k:]
	o.sent -= n
	var finished []string
	if n > 0 {
		finished = o.dropLocked(n)
	}
	onSent := o.onSent
	o.mu.Unlock()
	if n == 0 {
		return
	}
	if onSent != nil {
		for _, id := range finished {
			onSent(id)
		}
	}
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// dropLocked removes the first n reports, which were sent, and returns
// the jobs that have no report left.
func (o *outbox) dropLocked(n int) []string {
	var finished []string
	for _, it := range o.items[:n] {
		if it.line != nil {
			o.lines--
			o.bytes -= len(it.line.Text)
		}
		o.pending[it.jobID]--
		if o.pending[it.jobID] == 0 {
			delete(o.pending, it.jobID)
			finished = append(finished, it.jobID)
		}
	}
	// Slicing, not copying: a full outbox is acked many times a second,
	// and append moves only the live items when it grows the array.
	clear(o.items[:n])
	o.items = o.items[n:]
	o.room.Broadcast()
	return finished
}

// has reports whether reports of job id wait to be sent.
func (o *outbox) has(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending[id] > 0
}

package joblog

import (
	"sync"
	"sync/atomic"
)

// A line in a hub's window goes to every follower of its attempt on this
// replica. Encoding it once per shape (the fields a subscription selects,
// under their aliases) and sharing the bytes is what lets one replica
// serve many followers of a chatty job: without it every line is encoded
// once per subscriber. Only the line's own fields go in, so the bytes are
// the same for every viewer who may read the line at all, and they live on
// the line itself: nothing is shared across jobs, attempts or tenants.
type encodings struct {
	owner *Line         // a copy of the Line by value is not the owner and encodes itself
	held  *atomic.Int64 // the bytes of encodings its hub holds
	mu    sync.Mutex
	// byKey is replaced, never changed, under mu: a hundred followers
	// read it without taking the lock.
	byKey   atomic.Pointer[[]encoded]
	dropped bool // the hub let go of the line: keep nothing more (under mu)
}

type encoded struct {
	shape string
	b     []byte
}

// Bounds on what a hub keeps encoded: subscribers choose their shape, so a
// client spelling many aliases must not grow the window. Past them lines
// are encoded per subscriber, as without sharing.
const (
	maxShapes       = 4
	maxEncodedBytes = 2 * windowBytes
)

// shareEncodings gives l a cache of its encodings, charged to held; the
// hub does so for the lines it publishes, which it never changes
// afterwards, and calls dropEncodings when it lets go of them.
func (l *Line) shareEncodings(held *atomic.Int64) { l.enc = &encodings{owner: l, held: held} }

// dropEncodings frees l's encodings from its hub's account; a follower
// still sending the line encodes it for itself from then on.
func (l *Line) dropEncodings() {
	c := l.enc
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropped = true
	if p := c.byKey.Load(); p != nil {
		for _, e := range *p {
			c.held.Add(-int64(len(e.b)))
		}
	}
}

// Encoded returns encode(l), computed once per shape for a line a hub
// published and shared by every follower that asks with the same shape;
// other lines (history a follow read itself) are encoded on each call.
// encode must depend on l and shape only, and the caller must not change
// the bytes returned.
func (l *Line) Encoded(shape string, encode func(*Line) []byte) []byte {
	c := l.enc
	if c == nil || c.owner != l {
		return encode(l)
	}
	if b, ok := c.find(shape); ok {
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.find(shape); ok { // another follower encoded it meanwhile
		return b
	}
	b := encode(l)
	var old []encoded
	if p := c.byKey.Load(); p != nil {
		old = *p
	}
	if c.dropped || len(old) >= maxShapes {
		return b
	}
	if c.held.Add(int64(len(b))) > maxEncodedBytes {
		c.held.Add(-int64(len(b)))
		return b
	}
	next := append(old[:len(old):len(old)], encoded{shape: shape, b: b})
	c.byKey.Store(&next)
	return b
}

func (c *encodings) find(shape string) ([]byte, bool) {
	if p := c.byKey.Load(); p != nil {
		for _, e := range *p {
			if e.shape == shape {
				return e.b, true
			}
		}
	}
	return nil, false
}

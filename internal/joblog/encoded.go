package joblog

import "sync"

// A line in a hub's window goes to every follower of its attempt on this
// replica. Encoding it once per shape (the fields a subscription selects,
// under their aliases) and sharing the bytes is what lets one replica
// serve many followers of a chatty job: without it every line is encoded
// once per subscriber. Only the line's own fields go in, so the bytes are
// the same for every viewer who may read the line at all, and they live on
// the line itself: nothing is shared across jobs, attempts or tenants.
type encodings struct {
	owner *Line // a copy of the Line by value is not the owner and encodes itself
	mu    sync.Mutex
	byKey []encoded
}

type encoded struct {
	shape string
	b     []byte
}

// maxShapes bounds the encodings kept per line: subscribers choose their
// shape, so a client spelling many aliases must not grow the window; past
// the bound lines are encoded per subscriber, as before.
const maxShapes = 4

// shareEncodings gives l a cache of its encodings; the hub does so for the
// lines it publishes, which it never changes afterwards.
func (l *Line) shareEncodings() { l.enc = &encodings{owner: l} }

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
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.byKey {
		if e.shape == shape {
			return e.b
		}
	}
	b := encode(l)
	if len(c.byKey) < maxShapes {
		c.byKey = append(c.byKey, encoded{shape: shape, b: b})
	}
	return b
}

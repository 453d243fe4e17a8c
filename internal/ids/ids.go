// Package ids makes the opaque, prefixed identifiers used for every entity
// (job_01j…, node_01j…). They sort by creation time, so pagination by ID is
// stable, and they are the same strings on SQLite and PostgreSQL.
package ids

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Crockford's base32, lower case: no I, L, O, U to misread.
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// generator makes ULIDs that strictly increase within the process.
type generator struct {
	mu      sync.Mutex
	now     func() time.Time
	entropy *ulid.MonotonicEntropy // not safe for concurrent use: under mu
	lastMS  uint64
}

func newGenerator(now func() time.Time, entropy *ulid.MonotonicEntropy) *generator {
	return &generator{now: now, entropy: entropy}
}

// std draws from crypto/rand; within a millisecond each ID adds a random
// step of up to 2³² to the last one's entropy.
var std = newGenerator(time.Now, ulid.Monotonic(rand.Reader, 0))

// next returns an ID greater than every earlier one: a clock that steps
// back reuses the last millisecond, and a millisecond whose entropy runs
// out (ulid.ErrMonotonicOverflow) moves on to the next.
func (g *generator) next() (ulid.ULID, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := max(ulid.Timestamp(g.now()), g.lastMS)
	for {
		id, err := ulid.New(ms, g.entropy)
		if errors.Is(err, ulid.ErrMonotonicOverflow) {
			ms++
			continue
		}
		if err != nil {
			return ulid.ULID{}, fmt.Errorf("making an id: %w", err)
		}
		g.lastMS = ms
		return id, nil
	}
}

// New returns prefix + "_" + a 26-character ULID in lower case. IDs made by
// this process increase strictly, also within a millisecond.
func New(prefix string) string {
	id, err := std.next()
	if err != nil {
		// Only crypto/rand failing, which Go treats as fatal itself.
		panic(err)
	}
	return format(prefix, id)
}

func format(prefix string, id ulid.ULID) string {
	return prefix + "_" + strings.ToLower(id.String())
}

// Prefix returns the type prefix of id ("job" for "job_01j…"), or "" when id
// has none.
func Prefix(id string) string {
	p, rest, ok := strings.Cut(id, "_")
	if !ok || p == "" || len(rest) != 26 {
		return ""
	}
	for _, c := range rest {
		if !strings.ContainsRune(alphabet, c) {
			return ""
		}
	}
	return p
}

// Package ids makes the opaque, prefixed identifiers used for every entity
// (job_01j…, node_01j…). They sort by creation time, so pagination by ID is
// stable, and they are the same strings on SQLite and PostgreSQL.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// Crockford's base32, lower case: no I, L, O, U to misread.
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var (
	mu       sync.Mutex
	lastMS   uint64
	lastRand [10]byte
)

// New returns prefix + "_" + a 26-character ULID in lower case. IDs made in
// the same millisecond by this process increase monotonically.
func New(prefix string) string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	mu.Lock()
	if ms <= lastMS {
		ms = lastMS
		// Increment the random part so IDs stay ordered within a millisecond.
		for i := len(lastRand) - 1; i >= 0; i-- {
			lastRand[i]++
			if lastRand[i] != 0 {
				break
			}
		}
	} else {
		lastMS = ms
		_, _ = rand.Read(lastRand[:])
	}
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], ms)
	copy(b[:6], t[2:])
	copy(b[6:], lastRand[:])
	mu.Unlock()
	return prefix + "_" + encode(b)
}

func encode(b [16]byte) string {
	// 128 bits in 26 base32 digits; the first digit carries 3 bits.
	var out [26]byte
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
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

package auth

import (
	"net/netip"
	"sync"
	"time"
)

// Backoff is how failed sign-ins against one key are slowed down. Failures
// fill a leaky bucket; once it holds more than Free, every further failure
// makes the key wait, Base at first and twice as long each time, up to Max.
// One failure leaks out every Leak, so a key that stops failing is
// forgiven gradually, and a key failing no faster than one per Leak is
// never slowed at all.
type Backoff struct {
	Free float64
	Leak time.Duration
	Base time.Duration
	Max  time.Duration
}

// Policy is the sign-in throttle: three buckets per attempt, as the large
// identity providers do it.
type Policy struct {
	// Pair is per (account, client address): the tight one, so a guesser
	// at one address is slowed after a few tries at one account.
	Pair Backoff
	// Addr is per client address across all accounts: password spraying.
	Addr Backoff
	// Account is per account across all addresses: a guesser spread over
	// many addresses. It is looser than Pair and leaks faster than Pair
	// lets one address fail, so one address, however hard it hammers,
	// never fills it, and the real user at another address is not held
	// up. Only a spread-out attack does, and then not at addresses where
	// the account signed in within Known (familiar addresses).
	Account Backoff
	Known   time.Duration
}

// DefaultPolicy: 5 free tries per account and address, then 1 s, 2 s, 4 s …
// up to 15 min; 30 per address across accounts (up to 1 h); 50 per account
// across addresses, leaking one every 30 s (up to 15 min).
var DefaultPolicy = Policy{
	Pair:    Backoff{Free: 5, Leak: 5 * time.Minute, Base: time.Second, Max: 15 * time.Minute},
	Addr:    Backoff{Free: 30, Leak: 5 * time.Minute, Base: time.Second, Max: time.Hour},
	Account: Backoff{Free: 50, Leak: 30 * time.Second, Base: time.Second, Max: 15 * time.Minute},
	Known:   30 * 24 * time.Hour,
}

// Limiter throttles sign-in attempts by Policy. It lives in memory: a
// restart forgets it, and each server replica counts on its own.
type Limiter struct {
	policy  Policy
	now     func() time.Time
	mu      sync.Mutex
	buckets map[bucketKey]*bucket
	known   map[pairKey]time.Time
	swept   time.Time
}

type pairKey struct{ account, addr string }

type bucketKey struct {
	kind byte // 'p'air, 'a'ddress or account 'u'ser
	pairKey
}

type bucket struct {
	level float64   // failures held, as of at
	at    time.Time // when level was last brought up to date
	until time.Time // no attempt before then
}

// NewLimiter returns a limiter with DefaultPolicy.
func NewLimiter(now func() time.Time) *Limiter { return NewLimiterWith(DefaultPolicy, now) }

// NewLimiterWith returns a limiter with policy p.
func NewLimiterWith(p Policy, now func() time.Time) *Limiter {
	return &Limiter{policy: p, now: now, buckets: map[bucketKey]*bucket{}, known: map[pairKey]time.Time{}}
}

// Attempt is one sign-in that Begin let through. It already counts as a
// failure, so concurrent guesses cannot all slip in before the first one
// is counted; Succeeded takes that back.
type Attempt struct {
	l    *Limiter
	pair pairKey
	undo []undo
}

type undo struct {
	b           *bucket
	until, prev time.Time
}

// Limit names the bucket that held an attempt back and for how long.
type Limit struct {
	By         string // "account and address", "address" or "account"
	RetryAfter time.Duration
}

// Begin starts an attempt to sign in to account from addr. When a bucket
// holds it back, it returns the longest wait, and the attempt is not
// counted (hammering while held back costs nothing and changes nothing).
func (l *Limiter) Begin(account, addr string) (*Attempt, *Limit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	pk := pairKey{account, addrKey(addr)}
	type check struct {
		key bucketKey
		b   Backoff
		by  string
	}
	checks := []check{
		{bucketKey{'p', pk}, l.policy.Pair, "account and address"},
		{bucketKey{'a', pairKey{addr: pk.addr}}, l.policy.Addr, "address"},
	}
	if t, ok := l.known[pk]; !ok || now.Sub(t) > l.policy.Known {
		checks = append(checks, check{bucketKey{'u', pairKey{account: account}}, l.policy.Account, "account"})
	}
	var held *Limit
	for _, c := range checks {
		if b := l.buckets[c.key]; b != nil && now.Before(b.until) {
			if wait := b.until.Sub(now); held == nil || wait > held.RetryAfter {
				held = &Limit{By: c.by, RetryAfter: wait}
			}
		}
	}
	if held != nil {
		return nil, held
	}
	a := &Attempt{l: l, pair: pk}
	// A familiar address still fills the account bucket: its failures
	// count like any other.
	checks = append(checks[:2], check{bucketKey{'u', pairKey{account: account}}, l.policy.Account, ""})
	for _, c := range checks {
		b := l.buckets[c.key]
		if b == nil {
			b = &bucket{at: now}
			l.buckets[c.key] = b
		}
		prev := b.until
		b.level = c.b.leaked(b.level, now.Sub(b.at)) + 1
		b.at = now
		if d := c.b.Wait(b.level); d > 0 {
			b.until = now.Add(d)
		}
		a.undo = append(a.undo, undo{b: b, until: b.until, prev: prev})
	}
	return a, nil
}

// Succeeded records that the attempt signed in: it was no failure, its
// account and address start afresh, and the address becomes familiar.
func (a *Attempt) Succeeded() {
	l := a.l
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range a.undo {
		u.b.level = max(0, u.b.level-1)
		if u.b.until.Equal(u.until) { // nobody failed since: lift our own wait
			u.b.until = u.prev
		}
	}
	delete(l.buckets, bucketKey{'p', a.pair})
	l.known[a.pair] = l.now()
}

func (b Backoff) leaked(level float64, since time.Duration) float64 {
	if b.Leak <= 0 {
		return 0
	}
	return max(0, level-float64(since)/float64(b.Leak))
}

// Wait is the wait after a failure that left level in the bucket.
func (b Backoff) Wait(level float64) time.Duration {
	over := level - b.Free
	if over <= 0 {
		return 0
	}
	d := b.Base
	for n := 1.0; n < over && d < b.Max; n++ {
		d *= 2
	}
	return min(d, b.Max)
}

// sweep drops buckets that have leaked empty and are not waiting, and
// addresses no longer familiar, so memory follows recent failures only.
// Each counted attempt costs an argon2 hash, which bounds how fast an
// attacker can add entries.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	for k, b := range l.buckets {
		p := l.policy.Pair
		switch k.kind {
		case 'a':
			p = l.policy.Addr
		case 'u':
			p = l.policy.Account
		}
		if p.leaked(b.level, now.Sub(b.at)) == 0 && !now.Before(b.until) {
			delete(l.buckets, k)
		}
	}
	for k, t := range l.known {
		if now.Sub(t) > l.policy.Known {
			delete(l.known, k)
		}
	}
}

// addrKey is the client address as throttled: IPv6 by its /64, the block
// one subscriber gets, so an attacker cannot step through 2^64 addresses.
func addrKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}

package auth_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/auth"
)

// clock is a test clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// step is one sign-in attempt in a limiter table test.
type step struct {
	after         time.Duration // advance the clock first
	account, addr string
	ok            bool          // the password was right
	times         int           // repeat, 0 meaning once
	held          time.Duration // the wait it gets, 0 when let through
	by            string        // the bucket that holds it back
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	const acct, other = "ada@acme.test", "bob@acme.test"
	const home, away = "198.51.100.7", "203.0.113.9"
	cases := []struct {
		name  string
		steps []step
	}{
		{"five free failures, then waits that double", []step{
			{account: acct, addr: away, times: 6},
			{account: acct, addr: away, held: time.Second, by: "account and address"},
			{after: time.Second, account: acct, addr: away},
			{account: acct, addr: away, held: 2 * time.Second, by: "account and address"},
			{after: 2 * time.Second, account: acct, addr: away},
			{account: acct, addr: away, held: 4 * time.Second, by: "account and address"},
			{after: time.Second, account: acct, addr: away, held: 3 * time.Second, by: "account and address"},
		}},
		{"hammering while held back counts nothing", []step{
			{account: acct, addr: away, times: 6},
			{account: acct, addr: away, times: 1000, held: time.Second, by: "account and address"},
			{after: time.Second, account: acct, addr: away},
			{account: acct, addr: away, held: 2 * time.Second, by: "account and address"},
		}},
		{"the right password from a fresh address while another is held", []step{
			{account: acct, addr: away, times: 6},
			{account: acct, addr: away, times: 100, held: time.Second, by: "account and address"},
			{account: acct, addr: home, ok: true},
		}},
		{"waits hold the right password too, at the held address", []step{
			{account: acct, addr: away, times: 6},
			{account: acct, addr: away, ok: true, held: time.Second, by: "account and address"},
			{after: time.Second, account: acct, addr: away, ok: true},
		}},
		{"a success starts the account and address afresh", []step{
			{account: acct, addr: home, times: 5},
			{account: acct, addr: home, ok: true},
			{account: acct, addr: home, times: 6},
			{account: acct, addr: home, held: time.Second, by: "account and address"},
		}},
		{"other accounts at the same address are not held by the pair", []step{
			{account: acct, addr: away, times: 6},
			{account: other, addr: away, ok: true},
		}},
		{"failures leak out one every five minutes", []step{
			{account: acct, addr: away, times: 6},
			{after: 5 * time.Minute, account: acct, addr: away},
			{account: acct, addr: away, held: time.Second, by: "account and address"},
			{after: 30 * time.Minute, account: acct, addr: away, times: 5},
		}},
		{"one address spraying many accounts", append(spray(away, 31),
			step{account: "x@acme.test", addr: away, held: time.Second, by: "address"},
			step{account: acct, addr: home, ok: true},
		)},
		{"one IPv6 subscriber is one address", []step{
			{account: acct, addr: "2001:db8:1:2::1", times: 3},
			{account: acct, addr: "2001:db8:1:2:ffff::9", times: 3},
			{account: acct, addr: "2001:db8:1:2::77", held: time.Second, by: "account and address"},
			{account: acct, addr: "2001:db8:1:3::1", ok: true},
		}},
		{"an account attacked from many addresses waits, but not at a familiar address", append(append(
			[]step{{account: acct, addr: home, ok: true}},
			spread(acct, 51)...),
			step{account: acct, addr: "192.0.2.200", ok: true, held: time.Second, by: "account"},
			step{account: acct, addr: home, ok: true},
		)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			l := auth.NewLimiter(c.now)
			for i, s := range tc.steps {
				c.advance(s.after)
				for range max(s.times, 1) {
					a, held := l.Begin(s.account, s.addr)
					switch {
					case s.held == 0 && held != nil:
						t.Fatalf("step %d (%s from %s): held %v by %s, want let through", i, s.account, s.addr, held.RetryAfter, held.By)
					case s.held != 0 && (held == nil || held.RetryAfter != s.held || held.By != s.by):
						t.Fatalf("step %d (%s from %s): held %+v, want %v by %s", i, s.account, s.addr, held, s.held, s.by)
					case a != nil && s.ok:
						a.Succeeded()
					}
				}
			}
		})
	}
}

// spray is one failure at each of n accounts from addr.
func spray(addr string, n int) []step {
	var out []step
	for i := range n {
		out = append(out, step{account: fmt.Sprintf("guess%d@acme.test", i), addr: addr})
	}
	return out
}

// spread is one failure at account from each of n addresses.
func spread(account string, n int) []step {
	var out []step
	for i := range n {
		out = append(out, step{account: account, addr: fmt.Sprintf("192.0.2.%d", i+1)})
	}
	return out
}

// An attacker hammering one account from one address, trying again the
// moment each wait ends, for a whole day, never holds up the real user
// signing in from a fresh address.
func TestLimiterHammering(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := auth.NewLimiter(c.now)
	const acct = "ada@acme.test"
	failures := 0
	for sec := range 24 * 60 * 60 {
		if a, _ := l.Begin(acct, "203.0.113.9"); a != nil {
			failures++
		}
		if sec%600 == 0 {
			a, held := l.Begin(acct, fmt.Sprintf("10.%d.%d.1", sec/600/256, sec/600%256))
			if held != nil {
				t.Fatalf("after %v and %d failed guesses, the real user at a fresh address is held %v by %s",
					time.Duration(sec)*time.Second, failures, held.RetryAfter, held.By)
			}
			a.Succeeded()
		}
		c.advance(time.Second)
	}
	// The attacker got about one guess per leak interval, not 86,400.
	if failures > 24*12+50 {
		t.Errorf("the attacker had %d guesses in a day", failures)
	}
}

func TestBackoffWait(t *testing.T) {
	t.Parallel()
	b := auth.DefaultPolicy.Pair
	cases := []struct {
		level float64
		want  time.Duration
	}{
		{0, 0}, {5, 0}, {5.5, time.Second}, {6, time.Second}, {6.2, 2 * time.Second}, {7, 2 * time.Second},
		{8, 4 * time.Second}, {15, 512 * time.Second}, {16, 15 * time.Minute}, {1e9, 15 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.level), func(t *testing.T) {
			t.Parallel()
			if got := b.Wait(tc.level); got != tc.want {
				t.Errorf("Wait(%v) = %v, want %v", tc.level, got, tc.want)
			}
		})
	}
}

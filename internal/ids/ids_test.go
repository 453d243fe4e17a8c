package ids

import (
	"crypto/rand"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

func TestNewIsPrefixedAndOrdered(t *testing.T) {
	t.Parallel()
	var got []string
	for range 1000 {
		got = append(got, New("job"))
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("ids made in sequence are not sorted")
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if Prefix(id) != "job" {
			t.Fatalf("Prefix(%q) = %q", id, Prefix(id))
		}
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{New("node"), "node"},
		{"job_", ""},
		{"job", ""},
		{"_01jabcdefghjkmnpqrstvwxyz0", ""},
		{"job_01JABCDEFGHJKMNPQRSTVWXYZ0", ""},
		{"job_01jabcdefghjkmnpqrstvwxyz", ""},
		{"job_01jabcdefghjkmnpqrstvwxyzu", ""},
	} {
		if got := Prefix(tc.in); got != tc.want {
			t.Errorf("Prefix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("job_01jabcdefghjkmnpqrstvwxyz0")
	f.Add("x_y")
	f.Fuzz(func(t *testing.T, s string) {
		p := Prefix(s)
		if p != "" && len(s) != len(p)+27 {
			t.Fatalf("accepted malformed id %q", s)
		}
	})
}

// maxEntropy reads as all ones: every millisecond starts at the largest
// entropy, so the next ID in it overflows.
type maxEntropy struct{}

func (maxEntropy) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0xff
	}
	return len(p), nil
}

// IDs keep increasing when a millisecond's entropy runs out or the clock
// steps back: the generator moves on to a later millisecond rather than
// wrap around to a smaller ID.
func TestNewIncreasesAcrossOverflow(t *testing.T) {
	t.Parallel()
	start := time.UnixMilli(1_700_000_000_000)
	tests := []struct {
		name    string
		entropy io.Reader
		inc     uint64
		clock   []time.Duration // offsets from start, one per ID
	}{
		{"entropy starts at its maximum", maxEntropy{}, 1, []time.Duration{0, 0, 0, 0}},
		{"small steps from random entropy", rand.Reader, 1, []time.Duration{0, 0, 0}},
		{"clock steps back after an overflow", maxEntropy{}, 1, []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, time.Millisecond, 0, 9 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			i := 0
			g := newGenerator(func() time.Time {
				now := start.Add(tc.clock[i])
				i++
				return now
			}, ulid.Monotonic(tc.entropy, tc.inc))
			var last string
			for range tc.clock {
				id, err := g.next()
				if err != nil {
					t.Fatal(err)
				}
				s := format("job", id)
				if s <= last {
					t.Fatalf("%s after %s: not increasing", s, last)
				}
				if Prefix(s) != "job" {
					t.Fatalf("Prefix(%q) = %q", s, Prefix(s))
				}
				last = s
			}
		})
	}
}

// An ID is the ULID of its time in lower case, so it sorts by creation.
func TestNewEncodesTime(t *testing.T) {
	t.Parallel()
	before := time.Now().Truncate(time.Millisecond)
	id := New("node")
	u, err := ulid.ParseStrict(strings.TrimPrefix(id, "node_"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ulid.Time(u.Time()); got.Before(before) || got.After(time.Now()) {
		t.Fatalf("time %v not between %v and now", got, before)
	}
	if strings.ToLower(id) != id {
		t.Fatalf("%s is not lower case", id)
	}
}

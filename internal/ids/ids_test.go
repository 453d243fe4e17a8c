package ids

import (
	"sort"
	"testing"
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

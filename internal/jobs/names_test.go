package jobs

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// A generated name is adjective-noun-number, lower case, a valid job name
// for every word drawn.
func TestGeneratedName(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^[a-z]+-[a-z]+-[0-9]{3}$`)
	tests := []struct {
		name string
		intn func(int) int
		want string
	}{
		{name: "first words", intn: func(int) int { return 0 }, want: "amber-badger-000"},
		{name: "last words", intn: func(n int) int { return n - 1 }, want: "zesty-zephyr-999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := generatedName(tt.intn); got != tt.want {
				t.Errorf("generatedName = %q; want %q", got, tt.want)
			}
		})
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for range 200 {
		n := generatedName(r.IntN)
		if !shape.MatchString(n) {
			t.Fatalf("generated name %q is not adjective-noun-NNN", n)
		}
		seen[n] = true
	}
	if len(seen) < 190 {
		t.Errorf("only %d distinct names out of 200 draws", len(seen))
	}
}

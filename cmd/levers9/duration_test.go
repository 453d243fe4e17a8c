package main

import (
	"math"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"2h30m", 150 * time.Minute, true},
		{"0", 0, true},
		{"0d", 0, true},
		{"30d", 30 * day, true},
		{"1d12h", 36 * time.Hour, true},
		{"7d0.5h", 7*day + 30*time.Minute, true},
		{"106751d", 106751 * day, true},
		{"", 0, false},
		{"d", 0, false},
		{"1d1d", 0, false},
		{"-1s", 0, false},
		{"-1d", 0, false},
		{"1d-2h", 0, false},
		{"1d+2h", 0, false},
		{"+1d", 0, false},
		{"1.5d", 0, false},
		{"30", 0, false},
		{"soon", 0, false},
		{"106752d", 0, false},                  // past the largest duration
		{"106751d24h", 0, false},               // the days fit, the sum does not
		{"9223372036854775807d", 0, false},     // overflows the days
		{"99999999999999999999999d", 0, false}, // overflows an int64
		{"3000000h", 0, false},                 // time.ParseDuration's own overflow
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if d, err := parseDuration("106751d23h47m16.854775807s"); err != nil || d != math.MaxInt64 {
		t.Errorf("the largest duration: %v, %v", d, err)
	}
}

package main

import (
	"io"
	"testing"
	"time"
)

// --drain-delay defaults to LEVERS9_DRAIN_DELAY, else 5s; 0 stops at once,
// a negative delay is refused.
func TestDrainDelayConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		want time.Duration
		ok   bool
	}{
		{nil, nil, defaultDrainDelay, true},
		{nil, map[string]string{"LEVERS9_DRAIN_DELAY": "30s"}, 30 * time.Second, true},
		{[]string{"--drain-delay", "0"}, map[string]string{"LEVERS9_DRAIN_DELAY": "30s"}, 0, true},
		{[]string{"--drain-delay", "-1s"}, nil, 0, false},
		{nil, map[string]string{"LEVERS9_DRAIN_DELAY": "soon"}, 0, false},
	}
	for _, tc := range cases {
		c, err := parseServerConfig(tc.args, lookupIn(tc.env), io.Discard)
		switch {
		case tc.ok && (err != nil || c.DrainDelay != tc.want):
			t.Errorf("%v %v: %v, %v; want %v", tc.args, tc.env, c.DrainDelay, err, tc.want)
		case !tc.ok && err == nil:
			t.Errorf("%v %v: accepted (%v)", tc.args, tc.env, c.DrainDelay)
		}
	}
}

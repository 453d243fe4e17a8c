package main

import (
	"testing"
)

// Context names and server URLs are checked before anything is written.
func TestContextInputChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"prod", true}, {"127.0.0.1:8080", true}, {"", false}, {"two words", false}, {"tab\tname", false},
		{string(make([]byte, 65)), false},
	} {
		if err := checkContextName(tc.name); (err == nil) != tc.ok {
			t.Errorf("checkContextName(%q) = %v; ok %v", tc.name, err, tc.ok)
		}
	}
	if h := hint("lv9_abcdefghijkl"); h != "lv9_abcd…" {
		t.Errorf("hint = %q", h)
	}
	if h := hint("short"); h != "*****" {
		t.Errorf("hint of a short token = %q", h)
	}
}

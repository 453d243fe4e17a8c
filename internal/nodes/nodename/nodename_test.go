package nodename

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"7", true},
		{"gpu-01", true},
		{"Node_2.lab", true},
		{"a.b-c_d", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"-node", false},
		{"node-", false},
		{".node", false},
		{"node.", false},
		{"_node", false},
		{"node_", false},
		{"two words", false},
		{"node/1", false},
		{"node:1", false},
		{"nœud", false},
		{"node\n", false},
	} {
		if got := Valid(tc.name); got != tc.ok {
			t.Errorf("Valid(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

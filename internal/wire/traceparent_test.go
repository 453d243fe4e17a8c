package wire

import (
	"strings"
	"testing"
)

func TestCheckTraceParent(t *testing.T) {
	t.Parallel()
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"valid", good, true},
		{"not sampled", strings.TrimSuffix(good, "01") + "00", true},
		{"upper case", strings.ToUpper(good), false},
		{"version ff", "ff" + good[2:], false},
		{"zero trace ID", "00-" + strings.Repeat("0", 32) + good[35:], false},
		{"zero span ID", good[:36] + strings.Repeat("0", 16) + good[52:], false},
		{"short", good[:54], false},
		{"long", good + "0", false},
		{"dashes moved", "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", false},
		{"not hex", strings.Replace(good, "4bf9", "4bg9", 1), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := CheckTraceParent(tc.in); (err == nil) != tc.ok {
				t.Errorf("CheckTraceParent(%q) = %v, want ok %v", tc.in, err, tc.ok)
			}
		})
	}
}

// A Start with a traceparent round-trips; one with garbage is refused
// before it reaches the agent.
func TestStartTraceParent(t *testing.T) {
	t.Parallel()
	start := Start{JobID: "job_01", Services: []ServiceStart{{Name: "main", Command: []string{"true"}}},
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if err := start.Validate(); err != nil {
		t.Fatalf("valid Start refused: %v", err)
	}
	start.TraceParent = "00-abc"
	err := start.Validate()
	if err == nil || !strings.Contains(err.Error(), "traceParent") {
		t.Fatalf("Start with a bad traceparent: err = %v, want one naming traceParent", err)
	}
}

package relay

import (
	"errors"
	"fmt"
	"testing"

	"github.com/levers9/levers9/internal/fault"
)

// A snapshot's failure, kept on a blueprint every member reads, says a
// fault's message but not an internal error's text.
func TestSnapshotFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cause error
		want  string
	}{
		{"a fault", fault.New(fault.BadUserInput, "snapshots need a container node"), "snapshots need a container node"},
		{"a wrapped fault", fmt.Errorf("committing: %w", fault.New(fault.Unavailable, "the node went away")), "the node went away"},
		{"an internal error", errors.New(`loading blueprint bp_1: pq: connection to 10.0.0.7:5432 refused`), "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := snapshotFailure(tc.cause); got != tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}

package functions

import (
	"context"
	"time"

	"github.com/levers9/levers9/ent"
)

// BoxContainer returns the job of a READY container of BOX function f,
// starting one when none runs and waiting up to wait (like
// RealtimeContainer).
func (s *Service) BoxContainer(ctx context.Context, f *ent.Function, wait time.Duration) (jobID string, err error) {
	return "", errTODOBox
}

var errTODOBox = ErrNotBuiltYet

// ErrNotBuiltYet is a placeholder while boxes are built.
var ErrNotBuiltYet = context.Canceled

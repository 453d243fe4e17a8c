package runtime

import (
	"errors"
	"sync"
)

// FreezeState is a job's frozen flag, which both runtimes keep the same
// way: set before its services freeze (or cleared before they thaw), so a
// service that finishes starting meanwhile reads it and follows.
type FreezeState struct {
	mu     sync.Mutex
	frozen bool
}

// Frozen reports whether Freeze came last.
func (f *FreezeState) Frozen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen
}

// SetFrozen sets the flag, then applies each service's freeze or thaw
// (apply), and joins their errors.
func SetFrozen[S any](f *FreezeState, frozen bool, services []S, apply func(S) error) error {
	f.mu.Lock()
	f.frozen = frozen
	f.mu.Unlock()
	var errs []error
	for _, s := range services {
		errs = append(errs, apply(s))
	}
	return errors.Join(errs...)
}

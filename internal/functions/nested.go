package functions

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/fault"
)

// Calls made from inside a function stay inside its app: the runner names
// functions of its own app, and reads and cancels only its app's calls.

// sibling is function name of the runner's app.
func (s *Service) sibling(ctx context.Context, r *Runner, name string) (*ent.Function, error) {
	// Its own version's: each deploy adds the app's functions again.
	f, err := s.DB.Ent.Function.Query().Where(function.AppID(r.AppID), function.Name(name), function.Version(r.Version)).Only(r.Context(ctx))
	if ent.IsNotFound(err) {
		return nil, &fault.Error{Code: fault.NotFound, Field: "function", Message: fmt.Sprintf("app has no function %q", clip(name))}
	}
	if err != nil {
		return nil, fmt.Errorf("reading function %s: %w", name, err)
	}
	return f, nil
}

// RunnerCall calls function name of the runner's app.
func (s *Service) RunnerCall(ctx context.Context, r *Runner, name string, args Payload) (*ent.Task, error) {
	f, err := s.sibling(ctx, r, name)
	if err != nil {
		return nil, err
	}
	return s.Call(r.Context(ctx), f.ID, args)
}

// RunnerPut puts an item on task queue name of the runner's app.
func (s *Service) RunnerPut(ctx context.Context, r *Runner, name string, item Payload, key string) (*ent.Task, error) {
	f, err := s.sibling(ctx, r, name)
	if err != nil {
		return nil, err
	}
	t, _, err := s.Put(r.Context(ctx), f.ID, item, CallOptions{IdempotencyKey: key})
	return t, err
}

// RunnerMap maps function name of the runner's app over items.
func (s *Service) RunnerMap(ctx context.Context, r *Runner, name string, items []Payload) (*ent.FunctionMap, error) {
	f, err := s.sibling(ctx, r, name)
	if err != nil {
		return nil, err
	}
	return s.Map(r.Context(ctx), f.ID, items)
}

// RunnerAwait is Await for a call of the runner's app.
func (s *Service) RunnerAwait(ctx context.Context, r *Runner, id string, wait time.Duration) (*ent.Task, error) {
	return s.await(r.Context(ctx), id, wait, func(t *ent.Task) bool { return t.AppID == r.AppID })
}

// RunnerMapResults is MapResults for a map of the runner's app.
func (s *Service) RunnerMapResults(ctx context.Context, r *Runner, id string, from, limit int, wait time.Duration) (*ent.FunctionMap, []*ent.Task, error) {
	return s.mapResults(r.Context(ctx), id, from, limit, wait, func(m *ent.FunctionMap) bool { return m.AppID == r.AppID })
}

// RunnerCancel cancels a call of the runner's app.
func (s *Service) RunnerCancel(ctx context.Context, r *Runner, id string) (*ent.Task, error) {
	if _, err := s.RunnerAwait(ctx, r, id, 0); err != nil {
		return nil, err
	}
	return s.CancelTask(r.Context(ctx), id)
}

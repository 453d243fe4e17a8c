package functions

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// MaxIdempotencyKey bounds an idempotency key.
const MaxIdempotencyKey = 200

// CallOptions say what made a call and how to recognise a repeat.
type CallOptions struct {
	Source task.Source // "" = CALL
	// IdempotencyKey: a second call in the same app with the same
	// non-empty key returns the first task instead of storing another.
	IdempotencyKey string
	// Anonymous: made by a caller without a token (a public URL), who
	// must not fill the database: refused while the function has
	// MaxAnonymousBacklog calls waiting.
	Anonymous bool
}

// MaxAnonymousBacklog is how many waiting calls of a public function
// still take calls from callers without a token.
const MaxAnonymousBacklog = 1000

// CallWith is Call with options (HTTP requests, task-queue puts, cron).
func (s *Service) CallWith(ctx context.Context, fnID string, args Payload, o CallOptions) (*ent.Task, error) {
	t, _, err := s.callWith(ctx, fnID, args, o, nil)
	return t, err
}

// Put adds an item to a TASK_QUEUE function (source QUEUE, or HTTP when
// given); created is false when the idempotency key returned an earlier
// task.
func (s *Service) Put(ctx context.Context, fnID string, item Payload, o CallOptions) (t *ent.Task, created bool, err error) {
	if o.Source == "" {
		o.Source = task.SourceQUEUE
	}
	return s.callWith(ctx, fnID, item, o, func(f *ent.Function) error {
		if f.Kind != function.KindTASK_QUEUE {
			return fault.Invalid("function", "%s is a %s function, not a task queue: call it instead", f.Name, f.Kind)
		}
		return nil
	})
}

// callWith stores one call of fnID (after check, when given, accepts the
// function). A call whose idempotency key the app has seen returns the
// first one's task, created false.
func (s *Service) callWith(ctx context.Context, fnID string, args Payload, o CallOptions, check func(*ent.Function) error) (*ent.Task, bool, error) {
	if o.Source == "" {
		o.Source = task.SourceCALL
	}
	if err := task.SourceValidator(o.Source); err != nil {
		return nil, false, fault.Invalid("source", "unknown source %q", clip(string(o.Source)))
	}
	if len(o.IdempotencyKey) > MaxIdempotencyKey {
		return nil, false, fault.Invalid("idempotencyKey", "an idempotency key has at most %d characters", MaxIdempotencyKey)
	}
	f, err := s.callable(ctx, fnID)
	if err != nil {
		return nil, false, err
	}
	if check != nil {
		if err := check(f); err != nil {
			return nil, false, err
		}
	}
	if o.Anonymous {
		if err := s.anonymousRoom(ctx, f); err != nil {
			return nil, false, err
		}
	}
	key := o.IdempotencyKey
	if key != "" {
		if t, err := s.withKey(ctx, f, key, o.Anonymous); err != nil || t != nil {
			return t, false, err
		}
	}
	if o.Source == task.SourceCRON && args.Data == nil && args.Blob == "" {
		args.Data = []byte{} // a tick calls fn() with nothing
	}
	if err := s.checkPayload(ctx, "args", args); err != nil {
		return nil, false, err
	}
	v := viewer.FromContext(ctx)
	t, err := s.newTask(s.DB.Ent, f, v.UserID, args).SetSource(o.Source).SetIdempotencyKey(key).Save(ctx)
	if key != "" && ent.IsConstraintError(err) {
		// A call with the same key was stored between the look-up and
		// the insert (the partial unique index refused ours): it is the
		// call.
		t, err := s.withKey(ctx, f, key, o.Anonymous)
		if err == nil && t == nil {
			err = fmt.Errorf("the call of %s with idempotency key %q vanished", f.Name, clip(key))
		}
		return t, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("storing a call of %s: %w", f.Name, err)
	}
	s.publish(ctx, notify.TopicFunction, f.ID)
	s.scale(ctx, f.ID)
	return t, true, nil
}

// withKey is the call of f's app with idempotency key key, nil when none.
// The system reads it: a key is the app's, whoever made the first call.
// A caller without a token (anonymous) gets only a call of f, the public
// function it reached, never one of the app's other functions.
func (s *Service) withKey(ctx context.Context, f *ent.Function, key string, anonymous bool) (*ent.Task, error) {
	t, err := s.DB.Ent.Task.Query().Where(task.AppID(f.AppID), task.IdempotencyKey(key)).Only(viewer.SystemContext(ctx))
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the call with idempotency key %q: %w", clip(key), err)
	}
	if anonymous && t.FunctionID != f.ID {
		return nil, fault.Invalid("idempotencyKey", "the key was used for another call: choose another")
	}
	return t, nil
}

// Task reads a task the viewer may see (for GET /api/tasks/{id}): one of
// its environment, or a public function's HTTP-made one, whoever asks
// (its ID, handed to whoever called the public URL, is the capability;
// calls made with a token stay their tenant's).
func (s *Service) Task(ctx context.Context, id string) (*ent.Task, error) {
	if viewer.FromContext(ctx).InTenant() {
		t, err := s.DB.Ent.Task.Get(ctx, id)
		if err == nil {
			return t, nil
		}
		if !ent.IsNotFound(err) {
			return nil, fmt.Errorf("reading task %s: %w", id, err)
		}
	}
	sys := viewer.SystemContext(ctx)
	t, err := s.DB.Ent.Task.Query().Where(task.ID(id), task.SourceEQ(task.SourceHTTP), task.HasFunctionWith(function.Public(true))).Only(sys)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("task %q", clip(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %s: %w", id, err)
	}
	return t, nil
}

// Requeue puts a DEAD task back as PENDING with a fresh attempt count;
// its owner or an admin may, while its function serves.
func (s *Service) Requeue(ctx context.Context, taskID string) (*ent.Task, error) {
	t, err := s.DB.Ent.Task.Get(ctx, taskID)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("task %q", clip(taskID)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %s: %w", taskID, err)
	}
	if v := viewer.FromContext(ctx); t.OwnerID != v.UserID && !v.Admin {
		return nil, fault.New(fault.Forbidden, "task %s is another user's: only they or an admin requeue it", t.ID)
	}
	if t.State != task.StateDEAD {
		return nil, fault.Invalid("task", "task %s is %s: only dead letters (DEAD) are requeued", t.ID, t.State)
	}
	if _, err := s.callable(ctx, t.FunctionID); err != nil {
		return nil, err
	}
	n, err := s.DB.Ent.Task.Update().Where(task.ID(t.ID), task.StateEQ(task.StateDEAD)).
		SetState(task.StatePENDING).SetAttempt(0).ClearNotBefore().ClearFinishedAt().ClearStartedAt().
		ClearContainerID().ClearDeadline().
		SetErrorKind("").SetErrorMessage("").SetErrorTraceback("").ClearErrorException().
		Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("requeueing task %s: %w", t.ID, err)
	}
	if n > 0 {
		if err := s.refreshMaps(ctx, s.DB.Ent, mapsOf([]*ent.Task{t})); err != nil {
			return nil, err
		}
		s.publish(ctx, notify.TopicTask, t.ID)
		s.publish(ctx, notify.TopicFunction, t.FunctionID)
		s.scale(ctx, t.FunctionID)
	}
	return s.DB.Ent.Task.Get(ctx, t.ID)
}

// anonymousRoom refuses a call without a token while f's backlog is full
// (one index range read, at most MaxAnonymousBacklog entries).
func (s *Service) anonymousRoom(ctx context.Context, f *ent.Function) error {
	ids, err := s.DB.Ent.Task.Query().
		Where(task.FunctionID(f.ID), task.StateEQ(task.StatePENDING)).
		Offset(MaxAnonymousBacklog - 1).Limit(1).IDs(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("counting waiting calls of %s: %w", f.Name, err)
	}
	if len(ids) > 0 {
		return fault.New(fault.RateLimited, "%s has %d calls waiting: try again later", f.Name, MaxAnonymousBacklog)
	}
	return nil
}

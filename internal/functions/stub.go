package functions

// Signatures of issue 16's domain API, being written now (helpers compile
// against them). The deploy helper replaces each body and deletes this
// file when done.

import (
	"context"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/fault"
)

var errTODO = fault.New(fault.Unavailable, "not built yet")

// CallOptions say what made a call and how to recognise a repeat.
type CallOptions struct {
	Source task.Source // "" = CALL
	// IdempotencyKey: a second call in the same app with the same
	// non-empty key returns the first task instead of storing another.
	IdempotencyKey string
}

// Deploy stores a new version of the deployed app spec.Name in the
// viewer's environment (creating the app at its first deploy): every
// function gets version = app.Version+1 and the live version moves to it.
// Older versions keep serving until stopped. A deployment name served by
// another deployed app of the environment is refused; secrets named must
// exist; cron expressions must parse. Bad input writes nothing.
func (s *Service) Deploy(ctx context.Context, spec AppSpec) (*ent.App, error) { return nil, errTODO }

// StopVersion stops version v of a deployed app: its calls are cancelled,
// its containers stopped, its URLs answer 404. Stopping the live version
// moves the alias to the newest serving one; stopping the last one stops
// the app.
func (s *Service) StopVersion(ctx context.Context, appID string, v int) (*ent.App, error) {
	return nil, errTODO
}

// Rollback points the app's unversioned URLs and lookups at serving
// version v (0: the newest serving version older than the live one).
func (s *Service) Rollback(ctx context.Context, appID string, v int) (*ent.App, error) {
	return nil, errTODO
}

// Lookup finds function (or deployment) name of the deployed app appName
// in the viewer's environment, in version v (0: the live one).
func (s *Service) Lookup(ctx context.Context, appName, name string, v int) (*ent.Function, error) {
	return nil, errTODO
}

// Resolve finds the function a deployment URL reaches in the viewer's
// environment (r.Tenant empty) or, for the public form, in the named
// tenant and environment where the function must be public; then ctx is
// replaced by one acting for the function's owner (returned). NotFound
// for anything the caller may not reach, stopped versions included.
func (s *Service) Resolve(ctx context.Context, r Route) (context.Context, *ent.Function, error) {
	return nil, nil, errTODO
}

// CallWith is Call with options (HTTP requests, task-queue puts, cron).
func (s *Service) CallWith(ctx context.Context, fnID string, args Payload, o CallOptions) (*ent.Task, error) {
	return nil, errTODO
}

// Put adds an item to a TASK_QUEUE function (source QUEUE, or HTTP when
// given); created is false when the idempotency key returned an earlier
// task.
func (s *Service) Put(ctx context.Context, fnID string, item Payload, o CallOptions) (t *ent.Task, created bool, err error) {
	return nil, false, errTODO
}

// Task reads a task the viewer may see (for GET /api/tasks/{id}).
func (s *Service) Task(ctx context.Context, id string) (*ent.Task, error) { return nil, errTODO }

// RealtimeContainer returns the job of a READY container of REALTIME
// function f, starting one when none runs, waiting up to wait.
func (s *Service) RealtimeContainer(ctx context.Context, f *ent.Function, wait time.Duration) (jobID string, err error) {
	return "", errTODO
}

// Requeue puts a DEAD task back as PENDING with a fresh attempt count.
func (s *Service) Requeue(ctx context.Context, taskID string) (*ent.Task, error) { return nil, errTODO }

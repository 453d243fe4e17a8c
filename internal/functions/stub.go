package functions

// Temporary: signatures the front doors compile against while the bodies
// are written (this file goes away before the issue closes).

import (
	"context"
	"errors"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/wire"
)

var errUnbuilt = errors.New("functions: not built yet")

func (s *Service) DeployEphemeral(ctx context.Context, spec AppSpec) (*ent.App, error) { return nil, errUnbuilt }
func (s *Service) StopApp(ctx context.Context, id, reason string) (*ent.App, error)     { return nil, errUnbuilt }
func (s *Service) Call(ctx context.Context, functionID string, args Payload) (*ent.Task, error) {
	return nil, errUnbuilt
}
func (s *Service) Map(ctx context.Context, functionID string, items []Payload) (*ent.FunctionMap, error) {
	return nil, errUnbuilt
}
func (s *Service) Await(ctx context.Context, taskID string, wait time.Duration) (*ent.Task, error) {
	return nil, errUnbuilt
}
func (s *Service) MapResults(ctx context.Context, mapID string, from, limit int, wait time.Duration) (*ent.FunctionMap, []*ent.Task, error) {
	return nil, nil, errUnbuilt
}
func (s *Service) CancelTask(ctx context.Context, id string) (*ent.Task, error)       { return nil, errUnbuilt }
func (s *Service) CancelMap(ctx context.Context, id string) (*ent.FunctionMap, error) { return nil, errUnbuilt }
func (s *Service) WaitReason(ctx context.Context, t *ent.Task) (string, error)        { return "", errUnbuilt }
func ResultOf(t *ent.Task) *Payload                                                   { return nil }
func FailureOf(t *ent.Task) *Failure                                                  { return nil }

// Runner is a container's identity, established by the agent that runs it
// (the socket it connects through is bound to its job).
type Runner struct {
	ContainerID, FunctionID, AppID, JobID, NodeID string
	TenantID, EnvironmentID, OwnerID              string
	Attempt                                       int
}

func (s *Service) RunnerFor(ctx context.Context, nodeID string, open wire.RunnerOpen) (*Runner, error) {
	return nil, errUnbuilt
}
func (r *Runner) Context(ctx context.Context) context.Context                  { return ctx }
func (s *Service) Describe(ctx context.Context, r *Runner) (*ent.Function, error) { return nil, errUnbuilt }

// Outcome is how one claimed call ended, as the runner reports it.
type Outcome struct {
	TaskID                string
	Attempt               int
	Result                *Payload
	Failure               *Failure
	StartedAt, FinishedAt time.Time
}

// Phases are the start phases of a container (zero: not reported).
type Phases struct{ CodeFetchedAt, ImageReadyAt, ProcessStartedAt, ImportedAt time.Time }

// ClaimRequest reports finished calls and asks for up to Max more,
// waiting up to Wait for one.
type ClaimRequest struct {
	Max    int
	Wait   time.Duration
	Done   []Outcome
	Phases Phases
}

// Claimed is a call handed to a runner.
type Claimed struct {
	ID             string
	Attempt        int
	Args           Payload
	TimeoutSeconds int
}

func (s *Service) Claim(ctx context.Context, r *Runner, req ClaimRequest) ([]Claimed, bool, error) {
	return nil, false, errUnbuilt
}
func (s *Service) RunnerCall(ctx context.Context, r *Runner, function string, args Payload) (*ent.Task, error) {
	return nil, errUnbuilt
}
func (s *Service) RunnerMap(ctx context.Context, r *Runner, function string, items []Payload) (*ent.FunctionMap, error) {
	return nil, errUnbuilt
}
func (s *Service) RunnerAwait(ctx context.Context, r *Runner, taskID string, wait time.Duration) (*ent.Task, error) {
	return nil, errUnbuilt
}
func (s *Service) RunnerMapResults(ctx context.Context, r *Runner, mapID string, from, limit int, wait time.Duration) (*ent.FunctionMap, []*ent.Task, error) {
	return nil, nil, errUnbuilt
}
func (s *Service) RunnerCancel(ctx context.Context, r *Runner, taskID string) (*ent.Task, error) {
	return nil, errUnbuilt
}
func (s *Service) Reconcile(ctx context.Context) error { return errUnbuilt }

package functions

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/functionmap"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// MaxMapItems is the most items one .map() call stores at once.
const MaxMapItems = 10000

// insertChunk keeps a bulk insert under SQLite's variable limit.
const insertChunk = 500

// Call stores one call of function fnID and wakes its containers; a
// container is started when none is free.
func (s *Service) Call(ctx context.Context, fnID string, args Payload) (*ent.Task, error) {
	return s.CallWith(ctx, fnID, args, CallOptions{})
}

// Map stores one call per item, numbered in input order, under one map.
func (s *Service) Map(ctx context.Context, fnID string, items []Payload) (*ent.FunctionMap, error) {
	f, err := s.callable(ctx, fnID)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 || len(items) > MaxMapItems {
		return nil, fault.Invalid("items", "a map has between 1 and %d items (got %d)", MaxMapItems, len(items))
	}
	for i, it := range items {
		if err := s.checkPayload(ctx, fmt.Sprintf("items[%d]", i), it); err != nil {
			return nil, err
		}
	}
	v := viewer.FromContext(ctx)
	var m *ent.FunctionMap
	// The viewer may call f (callable checked it, and the rows carry f's
	// tenant and environment): the items go in as the system, without
	// the privacy rules' per-row look-ups of the function and the map.
	sys := viewer.SystemContext(ctx)
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		var err error
		m, err = tx.Ent.FunctionMap.Create().
			SetTenantID(f.TenantID).SetEnvironmentID(f.EnvironmentID).
			SetFunctionID(f.ID).SetAppID(f.AppID).SetOwnerID(v.UserID).SetTotal(len(items)).Save(ctx)
		if err != nil {
			return fmt.Errorf("storing a map of %s: %w", f.Name, err)
		}
		for lo := 0; lo < len(items); lo += insertChunk {
			hi := min(lo+insertChunk, len(items))
			bulk := make([]*ent.TaskCreate, 0, hi-lo)
			for i := lo; i < hi; i++ {
				bulk = append(bulk, s.newTask(tx.Ent, f, v.UserID, items[i]).SetMapID(m.ID).SetMapIndex(i))
			}
			if err := tx.Ent.Task.CreateBulk(bulk...).Exec(sys); err != nil {
				return fmt.Errorf("storing items %d-%d of map %s: %w", lo, hi-1, m.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.publish(ctx, notify.TopicFunction, f.ID)
	s.scale(ctx, f.ID)
	return m, nil
}

// newTask is a pending call of f with args.
func (s *Service) newTask(c *ent.Client, f *ent.Function, owner string, args Payload) *ent.TaskCreate {
	tc := c.Task.Create().
		SetTenantID(f.TenantID).SetEnvironmentID(f.EnvironmentID).
		SetFunctionID(f.ID).SetAppID(f.AppID).SetOwnerID(owner).
		SetMaxAttempts(1 + f.Retries).SetTimeoutSeconds(f.TimeoutSeconds).
		SetCreatedAt(s.now())
	if args.Blob != "" {
		return tc.SetArgsBlob(args.Blob)
	}
	return tc.SetArgs(args.Data)
}

// callable returns function fnID when the viewer may call it: it is
// visible (tenant and environment) and serving (see serving).
func (s *Service) callable(ctx context.Context, fnID string) (*ent.Function, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || v.UserID == "" {
		return nil, fault.New(fault.Forbidden, "call functions from inside a tenant")
	}
	f, err := s.DB.Ent.Function.Query().Where(function.ID(fnID)).WithApp().Only(ctx)
	if ent.IsNotFound(err) {
		return nil, &fault.Error{Code: fault.NotFound, Field: "function", Message: fmt.Sprintf("function %q not found", clip(fnID))}
	}
	if err != nil {
		return nil, fmt.Errorf("reading function %s: %w", fnID, err)
	}
	if f.Edges.App.State == app.StateSTOPPED {
		return nil, fault.Invalid("function", "app %s of function %s is stopped", f.Edges.App.Name, f.Name)
	}
	if f.StoppedAt != nil {
		return nil, fault.Invalid("function", "version %d of app %s is stopped", f.Version, f.Edges.App.Name)
	}
	return f, nil
}

// checkPayload refuses a payload that is neither small inline bytes nor
// a blob the tenant holds.
func (s *Service) checkPayload(ctx context.Context, field string, p Payload) error {
	switch {
	case p.Blob != "" && p.Data != nil:
		return fault.Invalid(field, "give data or blob, not both")
	case p.Blob != "":
		if !hashPattern.MatchString(p.Blob) {
			return fault.Invalid(field, "blob must be a hex SHA-256")
		}
		if s.Blobs == nil {
			return fault.Invalid(field, "this server keeps no blobs")
		}
		ok, err := s.Blobs.Has(ctx, p.Blob)
		if err != nil {
			return fmt.Errorf("looking up blob: %w", err)
		}
		if !ok {
			return fault.Invalid(field, "blob %s was not uploaded", p.Blob[:12])
		}
	case len(p.Data) > InlineLimit:
		return fault.Invalid(field, "inline payload of %d bytes is over %d: upload it as a blob", len(p.Data), InlineLimit)
	case p.Data == nil:
		return fault.Invalid(field, "give data or blob")
	}
	return nil
}

// Await returns task id once it has ended, or as it is when wait elapses
// (at most a minute).
func (s *Service) Await(ctx context.Context, id string, wait time.Duration) (*ent.Task, error) {
	return s.await(ctx, id, wait, nil)
}

func (s *Service) await(ctx context.Context, id string, wait time.Duration, allow func(*ent.Task) bool) (*ent.Task, error) {
	var sig <-chan struct{}
	if s.Bus != nil && wait > 0 {
		ch, stop := s.Bus.Subscribe(notify.TopicTask, id)
		defer stop()
		sig = ch
	}
	deadline := time.NewTimer(capWait(wait))
	defer deadline.Stop()
	for {
		t, err := s.DB.Ent.Task.Get(ctx, id)
		if ent.IsNotFound(err) || (err == nil && allow != nil && !allow(t)) {
			return nil, fault.Missing(fmt.Sprintf("task %q", clip(id)))
		}
		if err != nil {
			return nil, fmt.Errorf("reading task %s: %w", id, err)
		}
		if Ended(t.State) || wait <= 0 {
			return t, nil
		}
		select {
		case <-sig:
		case <-deadline.C:
			return t, nil
		case <-ctx.Done():
			return t, nil
		}
	}
}

// MapResults returns the ended items of map id from index from on, in
// index order (at most limit), waiting up to wait for one to be there.
func (s *Service) MapResults(ctx context.Context, id string, from, limit int, wait time.Duration) (*ent.FunctionMap, []*ent.Task, error) {
	return s.mapResults(ctx, id, from, limit, wait, nil)
}

func (s *Service) mapResults(ctx context.Context, id string, from, limit int, wait time.Duration, allow func(*ent.FunctionMap) bool) (*ent.FunctionMap, []*ent.Task, error) {
	if from < 0 {
		return nil, nil, fault.Invalid("from", "must not be negative")
	}
	if limit <= 0 || limit > MaxMapItems {
		limit = 1000
	}
	var sig <-chan struct{}
	if s.Bus != nil && wait > 0 {
		ch, stop := s.Bus.Subscribe(notify.TopicMap, id)
		defer stop()
		sig = ch
	}
	deadline := time.NewTimer(capWait(wait))
	defer deadline.Stop()
	for {
		m, err := s.DB.Ent.FunctionMap.Get(ctx, id)
		if ent.IsNotFound(err) || (err == nil && allow != nil && !allow(m)) {
			return nil, nil, fault.Missing(fmt.Sprintf("map %q", clip(id)))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading map %s: %w", id, err)
		}
		ts, err := s.DB.Ent.Task.Query().
			Where(task.MapID(id), task.MapIndexGTE(from), task.StateIn(endedStates...)).
			Order(ent.Asc(task.FieldMapIndex)).Limit(limit).All(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("reading items of map %s: %w", id, err)
		}
		if len(ts) > 0 || wait <= 0 || from >= m.Total {
			return m, ts, nil
		}
		select {
		case <-sig:
		case <-deadline.C:
			return m, ts, nil
		case <-ctx.Done():
			return m, ts, nil
		}
	}
}

// MaxWait caps a long poll.
const MaxWait = time.Minute

func capWait(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Millisecond
	}
	return min(d, MaxWait)
}

var endedStates = []task.State{task.StateCOMPLETE, task.StateERROR, task.StateCANCELLED, task.StateDEAD}

// Ended reports whether a call is over: it returned, failed, was
// cancelled, or (a task-queue item) failed every attempt.
func Ended(st task.State) bool {
	return st == task.StateCOMPLETE || st == task.StateERROR || st == task.StateCANCELLED || st == task.StateDEAD
}

// Failed reports whether a call ended without a result.
func Failed(st task.State) bool { return Ended(st) && st != task.StateCOMPLETE }

// serving reports whether function f (its app edge loaded) takes calls
// and runs containers: its app is not stopped (an ephemeral app runs, a
// deployed one serves) and its version was not stopped.
func serving(f *ent.Function) bool {
	return f.Edges.App != nil && f.Edges.App.State != app.StateSTOPPED && f.StoppedAt == nil
}

// servingFunction is serving as a query predicate.
func servingFunction() predicate.Function {
	return function.And(function.StoppedAtIsNil(), function.HasAppWith(app.StateNEQ(app.StateSTOPPED)))
}

// ResultOf is a complete call's result, nil otherwise.
func ResultOf(t *ent.Task) *Payload {
	if t.State != task.StateCOMPLETE {
		return nil
	}
	if t.ResultBlob != "" {
		return &Payload{Blob: t.ResultBlob}
	}
	return &Payload{Data: t.Result}
}

// FailureOf is why a call failed (or its last attempt did, while it
// waits for a retry), nil when nothing failed.
func FailureOf(t *ent.Task) *Failure {
	if t.ErrorKind == "" {
		return nil
	}
	return &Failure{Kind: t.ErrorKind, Message: t.ErrorMessage, Traceback: t.ErrorTraceback, Exception: t.ErrorException}
}

// publish signals a change; a lost signal only delays.
func (s *Service) publish(ctx context.Context, topic, key string) {
	if s.Bus == nil {
		return
	}
	if err := s.Bus.Publish(ctx, topic, key); err != nil {
		s.Log.Warn("signalling a functions change", "topic", topic, "key", key, "err", err)
	}
}

var _ = functionmap.FieldTotal

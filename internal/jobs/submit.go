// Package jobs submits, prices and cancels jobs. Every rule a submission
// must pass lives here, whichever front door it came through.
package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/schema/rule"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/tracing"
	"github.com/levers9/levers9/internal/viewer"
)

// Service submits and cancels jobs.
type Service struct {
	DB  *database.DB
	Log *slog.Logger
	Now func() time.Time
	// Schedule enqueues placement of a job in the submitting transaction,
	// so a job is never stored without its scheduling work, nor the reverse.
	Schedule func(ctx context.Context, tx *sql.Tx, jobID string) error
	// ScheduleQueue, when set, is used by submissions instead of Schedule:
	// the same work, given the queue the submission already knows, so
	// nothing reads the new job back to find it.
	ScheduleQueue func(ctx context.Context, tx *sql.Tx, queueID string) error
	// Freed, when set, enqueues scheduling of the queues a job that just
	// ended frees capacity in, inside the ending transaction.
	Freed func(ctx context.Context, tx *sql.Tx, jobID string) error
	// Bus, when set, is signalled after each change: the job's followers,
	// the nodes that run it and the scheduler of its queue wake up.
	Bus *notify.Bus
	// Tracer, when set, traces each submission (a span per job whose
	// traceparent the job keeps, so scheduling and the node join its
	// trace); nil: tracing is off and costs nothing.
	Tracer trace.Tracer

	wakes wakes // queues whose scheduler a submission is to wake
}

// signal wakes up whoever follows job j: its event subscribers, the nodes
// its services are placed on (to start or stop them) and its queue's
// scheduler (capacity or demand changed). Failures are logged: the
// database holds the truth and periodic work catches up.
func (s *Service) signal(ctx context.Context, jobID string) {
	if s.Bus == nil {
		return
	}
	sys := viewer.SystemContext(ctx)
	// Only what names the signals: a job's row carries its whole spec.
	j, err := s.DB.Ent.Job.Query().Where(job.ID(jobID)).Select(job.FieldQueueID).
		WithServices(func(q *ent.ServiceQuery) { q.Select(service.FieldJobID, service.FieldNodeID) }).Only(sys)
	if err != nil {
		s.Log.Warn("signalling job change", "job", jobID, "err", err)
		return
	}
	s.signalChange(ctx, changeOf(j))
}

// jobChange names the signals of a job's change: the job, its queue and
// the nodes of its services. A transaction that loaded them hands them to
// signalChange, which then reads nothing.
type jobChange struct {
	jobID, queueID string // queueID "": not loaded, signalChange reads them
	nodes          []string
}

// changeOf is the change of j, loaded with its services.
func changeOf(j *ent.Job) jobChange {
	c := jobChange{jobID: j.ID, queueID: j.QueueID}
	for _, svc := range j.Edges.Services {
		if svc.NodeID != "" && !slices.Contains(c.nodes, svc.NodeID) {
			c.nodes = append(c.nodes, svc.NodeID)
		}
	}
	return c
}

// signalChange is signal with what names the signals at hand.
func (s *Service) signalChange(ctx context.Context, c jobChange) {
	if s.Bus == nil {
		return
	}
	if c.queueID == "" {
		s.signal(ctx, c.jobID)
		return
	}
	signals := []notify.Signal{{Topic: notify.TopicJob, Key: c.jobID}, {Topic: notify.TopicQueue, Key: c.queueID}}
	for _, n := range c.nodes {
		signals = append(signals, notify.Signal{Topic: notify.TopicNode, Key: n})
	}
	if err := s.Bus.PublishMany(ctx, signals...); err != nil {
		s.Log.Warn("signalling a job change", "job", c.jobID, "err", err)
	}
}

// publish signals one change; a lost signal only delays (periodic work
// catches up from the database).
func (s *Service) publish(ctx context.Context, topic, key string) {
	if s.Bus == nil {
		return
	}
	if err := s.Bus.Publish(ctx, topic, key); err != nil {
		s.Log.Warn("signalling a job change", "topic", topic, "key", key, "err", err)
	}
}

// checked is a spec that passed every rule, with what was looked up.
type checked struct {
	spec     jobspec.Job
	queue    *ent.Queue
	project  *ent.Project
	estimate billing.Estimate
}

// Submit validates spec against its queue and stores the job and its
// services as PENDING, with its scheduling work, in one transaction.
func (s *Service) Submit(ctx context.Context, spec jobspec.Job) (*ent.Job, error) {
	return s.SubmitOnce(ctx, spec, "")
}

// SubmitOnce is Submit with the client's idempotency key: when the viewer
// already submitted a job with key, that job is returned and nothing is
// written, so a client may retry a submission whose answer it lost. An
// empty key submits unconditionally.
func (s *Service) SubmitOnce(ctx context.Context, spec jobspec.Job, key string) (submitted *ent.Job, err error) {
	if s.Tracer != nil {
		var span trace.Span
		ctx, span = s.Tracer.Start(ctx, "jobs.submit")
		defer func() { endSubmitSpan(span, submitted, err) }()
	}
	v := viewer.FromContext(ctx)
	if !v.InTenant() || v.UserID == "" {
		return nil, fault.New(fault.Forbidden, "submit jobs from inside a tenant")
	}
	if err := checkIdempotencyKey(key); err != nil {
		return nil, err
	}
	if key != "" {
		if j, err := submittedWith(ctx, s.DB.Ent, v, key); err != nil || j != nil {
			return j, err
		}
	}
	var created *ent.Job
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		c, err := check(ctx, tx.Ent, spec, 1)
		if err != nil {
			return err
		}
		if err := affordable(ctx, tx.Ent, v, c); err != nil {
			return err
		}
		created, err = insert(ctx, tx.Ent, v, c, key)
		if err != nil {
			return err
		}
		s.scheduleNew(tx, created)
		return nil
	})
	if key != "" && ent.IsConstraintError(err) {
		// A submission with the same key committed between our look-up
		// and our insert: it is the job.
		return firstWithKey(ctx, s.DB.Ent, v, key)
	}
	if err != nil {
		return nil, err
	}
	// A new job has no node yet, and no follower (none knows its ID
	// before this answer; a follow reads the job when it starts): wake its
	// queue's scheduler only, without reading the job back, together with
	// the other submissions to that queue of the moment.
	s.wakeQueue(created.QueueID)
	s.Log.Debug("job submitted", "job", created.ID, "queue", created.QueueID)
	return created, nil
}

// Estimate prices spec for minutes of running, with the function the meter
// charges with, after the same checks as Submit.
func (s *Service) Estimate(ctx context.Context, spec jobspec.Job, minutes int) (billing.Estimate, error) {
	if minutes < 0 || minutes > 366*24*60 {
		return billing.Estimate{}, fault.Invalid("minutes", "must be between 0 and %d", 366*24*60)
	}
	if v := viewer.FromContext(ctx); !v.InTenant() {
		return billing.Estimate{}, fault.New(fault.Forbidden, "estimate jobs from inside a tenant")
	}
	c, err := check(ctx, s.DB.Ent, spec, minutes)
	if err != nil {
		return billing.Estimate{}, err
	}
	return c.estimate, nil
}

// check applies every rule of a submission that needs no writes.
func check(ctx context.Context, client *ent.Client, spec jobspec.Job, minutes int) (*checked, error) {
	if err := jobspec.Validate(spec); err != nil {
		return nil, err
	}
	c := &checked{spec: spec}
	q, noProjectOK, err := usableQueue(ctx, client, spec.Queue, strings.TrimSpace(spec.Project) == "")
	if err != nil {
		return nil, err
	}
	c.queue = q
	c.spec = withDefaults(spec, q)
	spec = c.spec
	if err := withinLimits(spec, q); err != nil {
		return nil, err
	}
	if err := checkMounts(ctx, client, spec, q); err != nil {
		return nil, err
	}
	if c.project, err = checkProject(ctx, client, spec, noProjectOK); err != nil {
		return nil, err
	}
	rates := queues.Rates(q)
	c.estimate, err = billing.EstimateCost(rates, Usage(spec, rates), minutes)
	if err != nil {
		return nil, fault.Invalid("services", "%v", err)
	}
	return c, nil
}

// withDefaults gives every service that names no CPU or no memory the
// queue's defaults, so no job holds or pays for nothing. It runs before
// limits, the estimate and insertion, and copies: the caller's spec is
// left alone.
func withDefaults(spec jobspec.Job, q *ent.Queue) jobspec.Job {
	svcs := make([]jobspec.Service, len(spec.Services))
	copy(svcs, spec.Services)
	for i := range svcs {
		if svcs[i].CPU == 0 {
			svcs[i].CPU = q.DefaultCPU
		}
		if svcs[i].MemoryMiB == 0 {
			svcs[i].MemoryMiB = q.DefaultMemoryMib
		}
	}
	spec.Services = svcs
	return spec
}

func withinLimits(spec jobspec.Job, q *ent.Queue) error {
	switch {
	case spec.Interactive && q.Mode == queue.ModeBatch:
		return fault.Invalid("interactive", "queue %s takes batch jobs only", q.Name)
	case !spec.Interactive && q.Mode == queue.ModeInteractive:
		return fault.Invalid("interactive", "queue %s takes interactive jobs only", q.Name)
	}
	var (
		gpus int
		cpu  float64
		mem  int64
	)
	for i, svc := range spec.Services {
		gpus += svc.GPUs
		cpu += svc.CPU
		mem += svc.MemoryMiB
		for _, t := range svc.GPUTypes {
			if _, ok := queues.Rates(q).GPURateFor(t); !ok {
				return fault.Invalid(fmt.Sprintf("services[%d].gpuTypes", i), "queue %s offers no GPU of type %q", q.Name, t)
			}
		}
	}
	switch {
	case gpus > q.MaxGpusPerJob:
		return fault.Invalid("services", "the job asks for %d GPUs; queue %s allows %d per job", gpus, q.Name, q.MaxGpusPerJob)
	case cpu > q.MaxCPUPerJob:
		return fault.Invalid("services", "the job asks for %g CPUs; queue %s allows %g per job", cpu, q.Name, q.MaxCPUPerJob)
	case mem > q.MaxMemoryMibPerJob:
		return fault.Invalid("services", "the job asks for %d MiB of memory; queue %s allows %d MiB per job", mem, q.Name, q.MaxMemoryMibPerJob)
	}
	return nil
}

func checkMounts(ctx context.Context, client *ent.Client, spec jobspec.Job, q *ent.Queue) error {
	for i, m := range spec.Mounts {
		field := fmt.Sprintf("mounts[%d].bucket", i)
		b, err := client.Bucket.Query().
			Where(bucket.Or(bucket.ID(m.Bucket), bucket.Name(m.Bucket))).
			WithStorage().
			Only(ctx)
		if ent.IsNotFound(err) {
			return &fault.Error{Code: fault.NotFound, Field: field, Message: fmt.Sprintf("bucket %q not found", m.Bucket)}
		}
		if err != nil {
			return fmt.Errorf("looking up bucket %q: %w", m.Bucket, err)
		}
		if ok, err := access.CanReadBucket(ctx, client, b.ID); err != nil || !ok {
			if err != nil {
				return err
			}
			return &fault.Error{Code: fault.Forbidden, Field: field, Message: fmt.Sprintf("none of your groups may read bucket %s", b.Name)}
		}
		if !m.ReadOnly {
			if ok, err := access.CanWriteBucket(ctx, client, b.ID); err != nil || !ok {
				if err != nil {
					return err
				}
				return &fault.Error{Code: fault.Forbidden, Field: field, Message: fmt.Sprintf("none of your groups may write bucket %s; mount it read-only", b.Name)}
			}
		}
		ok, err := buckets.Reachable(ctx, client, q, b.Edges.Storage)
		if err != nil {
			return err
		}
		if !ok {
			return fault.Invalid(field, "bucket %s is on storage %s, which queue %s cannot reach", b.Name, b.Edges.Storage.Name, q.Name)
		}
	}
	return nil
}

// checkProject finds the job's project, of which the viewer must be a
// member, or checks that the tenant lets jobs name none (unless the queue
// look-up already answered that: noProjectOK).
func checkProject(ctx context.Context, client *ent.Client, spec jobspec.Job, noProjectOK bool) (*ent.Project, error) {
	if strings.TrimSpace(spec.Project) == "" {
		if noProjectOK {
			return nil, nil
		}
		t, err := client.Tenant.Get(ctx, viewer.FromContext(ctx).TenantID)
		if err != nil {
			return nil, fmt.Errorf("loading tenant: %w", err)
		}
		if t.RequireProject {
			return nil, fault.Invalid("project", "this tenant requires every job to name a project")
		}
		return nil, nil
	}
	return memberProject(ctx, client, spec.Project)
}

// affordable refuses a job whose payer cannot cover its start fee and its
// first minute: under the `stop` policy on top of what the payer's pending
// and running jobs are committed to (metering.Admit, which locks the
// payer's balance until the job is stored), under `finish` on the balance.
func affordable(ctx context.Context, client *ent.Client, v *viewer.Viewer, c *checked) error {
	need := c.estimate.StartFee + c.estimate.PerMinute
	if need <= 0 {
		return nil
	}
	payer := ledger.Payer{TenantID: v.TenantID, UserID: v.UserID}
	if c.project != nil {
		payer = ledger.Payer{TenantID: v.TenantID, ProjectID: c.project.ID}
	}
	t, err := client.Tenant.Get(ctx, v.TenantID)
	if err != nil {
		return fmt.Errorf("loading tenant: %w", err)
	}
	if t.BudgetPolicy == tenant.BudgetPolicyStop {
		ok, bal, committed, err := metering.Admit(ctx, client, payer, need)
		if err != nil || ok {
			return err
		}
		return &fault.Error{
			Code: fault.InsufficientTokens,
			Message: fmt.Sprintf("%s has %s tokens, %s of them committed to its pending and running jobs; starting this job needs %s more (start fee %s + first minute %s)",
				payer, bal, committed, need, c.estimate.StartFee, c.estimate.PerMinute),
			Details: map[string]any{"balance": bal.String(), "committed": committed.String(), "required": need.String()},
		}
	}
	bal, err := ledger.BalanceOf(ctx, client, payer)
	if err != nil {
		return err
	}
	if bal < need {
		return &fault.Error{
			Code:    fault.InsufficientTokens,
			Message: fmt.Sprintf("%s has %s tokens; starting this job needs %s (start fee %s + first minute %s)", payer, bal, need, c.estimate.StartFee, c.estimate.PerMinute),
			Details: map[string]any{"balance": bal.String(), "required": need.String()},
		}
	}
	return nil
}

func insert(ctx context.Context, client *ent.Client, v *viewer.Viewer, c *checked, key string) (*ent.Job, error) {
	if c.spec.Name == "" && c.spec.Kind() == jobspec.KindJob {
		// Named here, at submission, so every client shows the same name.
		c.spec.Name = generatedName(rand.IntN)
	}
	var project string
	if c.project != nil {
		project = c.project.ID
	}
	// The queue (usableQueue) and the project (memberProject) were read
	// through the viewer's rules in this transaction; the owner is the
	// viewer.
	wctx := rule.ReadInScope(ctx, c.queue.ID, v.UserID, project)
	cpu, mem := c.spec.SmallestRequest()
	create := client.Job.Create().
		SetName(c.spec.Name).
		SetSpec(c.spec).
		SetQueueID(c.queue.ID).
		SetOwnerID(v.UserID).
		SetInteractive(c.spec.Interactive).
		SetKind(job.Kind(c.spec.Kind())).
		SetPriority(c.spec.Priority).
		SetTimeoutSeconds(c.spec.TimeoutSeconds).
		SetRetries(c.spec.Retries).
		SetGpus(c.spec.TotalGPUs()).
		SetEstimatePerMinute(c.estimate.PerMinute).
		SetEstimateStartFee(c.estimate.StartFee).
		SetSmallestCPU(cpu).
		SetSmallestMemoryMib(mem).
		SetStatusReason(jobstate.ReasonSubmitted(c.queue.Name, c.queue.Backlogged))
	if project != "" {
		create.SetProjectID(project)
	}
	if key != "" {
		create.SetIdempotencyKey(key)
	}
	if tp := tracing.TraceParent(ctx); tp != "" {
		create.SetTraceParent(tp) // the submit span: the job's trace hangs from it
	}
	j, err := create.Save(wctx)
	if err != nil {
		return nil, fmt.Errorf("storing job: %w", err)
	}
	// One multi-row INSERT, linked to the job just inserted.
	wctx = rule.ReadInScope(wctx, j.ID)
	builders := make([]*ent.ServiceCreate, len(c.spec.Services))
	for i, svc := range c.spec.Services {
		builders[i] = client.Service.Create().
			SetJobID(j.ID).
			SetName(svc.Name).
			SetImage(svc.Image).
			SetCommand(svc.Command).
			SetArgs(svc.Args).
			SetEnv(svc.Env).
			SetCPU(svc.CPU).
			SetMemoryMib(svc.MemoryMiB).
			SetGpus(svc.GPUs).
			SetGpuTypes(svc.GPUTypes).
			SetPorts(svc.Ports)
	}
	if _, err := client.Service.CreateBulk(builders...).Save(wctx); err != nil {
		return nil, fmt.Errorf("storing services of job %s: %w", j.ID, err)
	}
	if err := recordEvent(ctx, client, j, "", jobevent.StatusPending, "submitted", j.CreatedAt); err != nil {
		return nil, err
	}
	return j, nil
}

// Ended reports whether a job in status s has ended (jobstate.Ended).
func Ended(s job.Status) bool { return jobstate.Ended(s) }

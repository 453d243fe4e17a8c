package functions

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Limits of what an app declares.
const (
	MaxFunctions      = 100
	MaxContainersCap  = 1000
	MaxConcurrency    = 1000
	MaxTimeoutSeconds = 24 * 60 * 60
	MaxRetries        = 10
	MaxScaledown      = 24 * 60 * 60
)

var (
	appName      = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
	functionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
	moduleName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	hashPattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	gpuType      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

// runnerCommand starts the runner in a container: the agent puts the
// levers9 package on its PYTHONPATH.
var runnerCommand = []string{"python3", "-m", "levers9.runner"}

// RunnerService names the one service of a function container's job (the
// relay reaches a REALTIME function's WebSocket server through it).
const RunnerService = "runner"

// RealtimePort names the port a REALTIME function's runner serves
// WebSockets on.
const RealtimePort = "ws"

// DeployEphemeral stores an app that lives while its script runs, with
// its functions (version 1), after checking every function against its
// queue as a container of it would be checked at submission. Bad input
// writes nothing.
func (s *Service) DeployEphemeral(ctx context.Context, spec AppSpec) (*ent.App, error) {
	v, plans, err := s.check(ctx, spec)
	if err != nil {
		return nil, err
	}
	var out *ent.App
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		a, err := tx.Ent.App.Create().
			SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).
			SetName(spec.Name).SetEphemeral(true).SetCodeHash(spec.CodeHash).SetOwnerID(v.UserID).SetLastSeenAt(s.now()).
			Save(ctx)
		if err != nil {
			return fmt.Errorf("storing app %s: %w", spec.Name, err)
		}
		if err := s.createFunctions(ctx, tx, v, a, 1, spec.CodeHash, plans); err != nil {
			return err
		}
		out, err = tx.Ent.App.Query().Where(app.ID(a.ID)).WithFunctions().Only(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.warm(ctx, out.Edges.Functions)
	s.Log.Info("app deployed", "app", out.ID, "name", out.Name, "functions", len(out.Edges.Functions))
	return out, nil
}

// warm starts the containers of functions that keep some warm.
func (s *Service) warm(ctx context.Context, fns []*ent.Function) {
	for _, f := range fns {
		if f.KeepWarm > 0 || f.MinContainers > 0 {
			s.scale(ctx, f.ID)
		}
	}
}

// check is what every deploy checks before writing anything: the viewer,
// the app's name and code, and each function (see plan).
func (s *Service) check(ctx context.Context, spec AppSpec) (*viewer.Viewer, []*functionPlan, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || v.UserID == "" {
		return nil, nil, fault.New(fault.Forbidden, "deploy apps from inside a tenant")
	}
	if !appName.MatchString(spec.Name) {
		return nil, nil, fault.Invalid("name", "app name %q must be 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", clip(spec.Name))
	}
	if !hashPattern.MatchString(spec.CodeHash) {
		return nil, nil, fault.Invalid("codeHash", "must be the hex SHA-256 of the uploaded code package")
	}
	if len(spec.Functions) == 0 || len(spec.Functions) > MaxFunctions {
		return nil, nil, fault.Invalid("functions", "an app has between 1 and %d functions", MaxFunctions)
	}
	if s.Blobs != nil {
		ok, err := s.Blobs.Has(ctx, spec.CodeHash)
		if err != nil {
			return nil, nil, fmt.Errorf("looking up code package: %w", err)
		}
		if !ok {
			return nil, nil, fault.Invalid("codeHash", "no code package %s was uploaded (PUT /api/blobs/%s?kind=code first)", spec.CodeHash[:12], spec.CodeHash)
		}
	}
	seen := map[string]bool{}
	urls := map[string]int{} // group/deployment → the function serving it
	var plans []*functionPlan
	for i, f := range spec.Functions {
		p, err := s.plan(ctx, i, f)
		if err != nil {
			return nil, nil, err
		}
		if seen[f.Name] {
			return nil, nil, fault.Invalid(fmt.Sprintf("functions[%d].name", i), "function %q is declared twice", f.Name)
		}
		seen[f.Name] = true
		if g := GroupOf(p.spec.Kind); g != "" {
			key := g + "/" + p.spec.Deployment
			if j, dup := urls[key]; dup {
				return nil, nil, fault.Invalid(fmt.Sprintf("functions[%d].deployment", i),
					"deployment name %q is taken by function %s: /%s must name one function", p.spec.Deployment, spec.Functions[j].Name, key)
			}
			urls[key] = i
		}
		plans = append(plans, p)
	}
	return v, plans, nil
}

// createFunctions stores the planned functions as version version of app a.
func (s *Service) createFunctions(ctx context.Context, tx *database.Tx, v *viewer.Viewer, a *ent.App, version int, codeHash string, plans []*functionPlan) error {
	now := s.now()
	for _, p := range plans {
		c := tx.Ent.Function.Create().
			SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).SetAppID(a.ID).SetOwnerID(v.UserID).
			SetName(p.spec.Name).SetModule(p.spec.Module).SetQualname(p.spec.Qualname).
			SetQueueID(p.queueID).SetImage(p.spec.Image).SetGpus(p.gpus).SetGpuTypes(p.gpuTypes).
			SetCPU(p.spec.CPU).SetMemoryMib(p.spec.MemoryMiB).SetTimeoutSeconds(p.spec.TimeoutSeconds).
			SetRetries(p.spec.Retries).SetMinContainers(p.spec.MinContainers).SetMaxContainers(p.spec.MaxContainers).
			SetKeepWarm(p.spec.KeepWarm).SetConcurrency(p.spec.Concurrency).
			SetScaledownWindowSeconds(p.spec.ScaledownWindowSeconds).
			SetVersion(version).SetKind(p.spec.Kind).SetDeployment(p.spec.Deployment).SetCodeHash(codeHash).
			SetHTTPMethod(p.spec.HTTPMethod).SetSyncTimeoutSeconds(p.spec.SyncTimeoutSeconds).
			SetPublic(p.spec.Public).SetCron(p.spec.Cron).SetBlueprintID(p.blueprintID)
		if len(p.spec.Ports) > 0 {
			c.SetPorts(p.spec.Ports)
		}
		if len(p.spec.Command) > 0 {
			c.SetCommand(p.spec.Command)
		}
		if len(p.spec.Secrets) > 0 {
			c.SetSecrets(p.spec.Secrets)
		}
		if p.schedule != nil {
			// The first tick after the deploy: ticks before it are not
			// replayed.
			c.SetNextRunAt(p.schedule.Next(now.UTC()))
		}
		if p.projectID != "" {
			c.SetProjectID(p.projectID)
		}
		f, err := c.Save(ctx)
		if err != nil {
			return fmt.Errorf("storing function %s: %w", p.spec.Name, err)
		}
		if f.Public {
			// Anyone who knows its URL may call it: who opened it is kept.
			if err := audit.Record(ctx, tx.Ent, v.TenantID, v.UserID, "deployment.public", f.ID, map[string]string{
				"app": a.Name, "deployment": f.Deployment, "kind": f.Kind.String(), "version": strconv.Itoa(version),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// functionPlan is a checked function with what was looked up.
type functionPlan struct {
	spec      FunctionSpec
	queueID   string
	projectID string
	gpus      int
	gpuTypes  []string
	schedule  cron.Schedule // CRON functions only
	// blueprintID is the READY blueprint whose image the function runs.
	blueprintID string
}

// plan checks function i and fills in its defaults.
func (s *Service) plan(ctx context.Context, i int, f FunctionSpec) (*functionPlan, error) {
	field := func(name string) string { return fmt.Sprintf("functions[%d].%s", i, name) }
	if !functionName.MatchString(f.Name) {
		return nil, fault.Invalid(field("name"), "function name %q must be a Python identifier of at most 63 characters", clip(f.Name))
	}
	if !moduleName.MatchString(f.Module) || len(f.Module) > 255 {
		return nil, fault.Invalid(field("module"), "module %q is not a dotted Python module name", clip(f.Module))
	}
	if !moduleName.MatchString(f.Qualname) || len(f.Qualname) > 255 {
		return nil, fault.Invalid(field("qualname"), "qualname %q is not a dotted Python name", clip(f.Qualname))
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if f.CPU == 0 {
		f.CPU = 1
	}
	if f.MemoryMiB == 0 {
		f.MemoryMiB = 1024
	}
	def(&f.TimeoutSeconds, 300)
	def(&f.MaxContainers, 10)
	def(&f.Concurrency, 1)
	// A box's idle window defaults to its queue's idle timeout (below).
	boxWindow := f.Kind == function.KindBOX && f.ScaledownWindowSeconds == 0
	def(&f.ScaledownWindowSeconds, 60)
	for _, c := range []struct {
		name   string
		v, top int
		lo     int
	}{
		{"timeoutSeconds", f.TimeoutSeconds, MaxTimeoutSeconds, 1},
		{"retries", f.Retries, MaxRetries, 0},
		{"minContainers", f.MinContainers, MaxContainersCap, 0},
		{"maxContainers", f.MaxContainers, MaxContainersCap, 1},
		{"keepWarm", f.KeepWarm, MaxContainersCap, 0},
		{"concurrency", f.Concurrency, MaxConcurrency, 1},
		{"scaledownWindowSeconds", f.ScaledownWindowSeconds, MaxScaledown, 1},
	} {
		if c.v < c.lo || c.v > c.top {
			return nil, fault.Invalid(field(c.name), "must be between %d and %d", c.lo, c.top)
		}
	}
	if f.MinContainers > f.MaxContainers || f.KeepWarm > f.MaxContainers {
		return nil, fault.Invalid(field("maxContainers"), "must be at least minContainers and keepWarm")
	}
	n, types, err := ParseGPU(f.GPU)
	if err != nil {
		return nil, fault.Invalid(field("gpu"), "%v", err)
	}
	p := &functionPlan{spec: f, gpus: n, gpuTypes: types}
	if err := s.planDeployment(ctx, i, p); err != nil {
		return nil, err
	}
	if err := s.planImage(ctx, i, p); err != nil {
		return nil, err
	}
	f = p.spec
	// The container's job must pass the queue's rules now, not at its
	// first call: group access, per-job limits, project, prices.
	// A runner (empty here) makes it a function's job, which may run a
	// blueprint's image.
	js := containerJob(f.Queue, f.Project, f.Name, f.Image, f.CPU, f.MemoryMiB, n, types, f.Kind, f.Ports, f.Command, &wire.Runner{})
	if _, err := s.Jobs.Estimate(ctx, js, 1); err != nil {
		return nil, onFunction(err, i, f.Name)
	}
	client := s.DB.Ent
	q, err := client.Queue.Query().Where(queue.Or(queue.ID(f.Queue), queue.Name(f.Queue))).Only(ctx)
	if err != nil {
		return nil, fmt.Errorf("looking up queue %q: %w", f.Queue, err)
	}
	p.queueID = q.ID
	if boxWindow {
		p.spec.ScaledownWindowSeconds = DefaultBoxScaledown
		if q.IdleTimeoutSeconds > 0 {
			p.spec.ScaledownWindowSeconds = min(q.IdleTimeoutSeconds, MaxScaledown)
		}
	}
	if f.Project != "" {
		pr, err := client.Project.Query().Where(project.Or(project.ID(f.Project), project.Name(f.Project))).Only(ctx)
		if err != nil {
			return nil, fmt.Errorf("looking up project %q: %w", f.Project, err)
		}
		p.projectID = pr.ID
	}
	return p, nil
}

// onFunction names function i in a submission error about its container.
func onFunction(err error, i int, name string) error {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		// The job spec's own checks name the field in their text.
		msg := err.Error()
		field, rest, ok := strings.Cut(msg, ": ")
		if !ok || !strings.HasPrefix(field, "services[0].") {
			return fault.Invalid(fmt.Sprintf("functions[%d]", i), "function %s: %s", name, msg)
		}
		fe = &fault.Error{Code: fault.BadUserInput, Field: field, Message: rest}
	}
	out := *fe
	f := strings.TrimPrefix(fe.Field, "services[0].")
	switch f {
	case "memoryMiB", "cpu", "image", "queue", "project":
	case "gpus", "gpuTypes":
		f = "gpu"
	default:
		if f == "" {
			f = "queue"
		}
	}
	out.Field = fmt.Sprintf("functions[%d].%s", i, f)
	out.Message = fmt.Sprintf("function %s: %s", name, fe.Message)
	return &out
}

// ParseGPU reads a GPU request: "" (none), "H100" (one), "H100:2" (two of
// a type), "H100,A100" (one of the first type with free capacity, in
// order), "H100,A100:2", or "2" (two of any type).
func ParseGPU(s string) (int, []string, error) {
	if s == "" {
		return 0, nil, nil
	}
	if len(s) > 512 {
		return 0, nil, errors.New("GPU request is too long")
	}
	n := 1
	kinds := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		c, err := strconv.Atoi(s[i+1:])
		if err != nil || c < 1 || c > 64 {
			return 0, nil, fmt.Errorf("GPU count in %q must be a number from 1 to 64", s)
		}
		n, kinds = c, s[:i]
	} else if c, err := strconv.Atoi(s); err == nil {
		if c < 0 || c > 64 {
			return 0, nil, fmt.Errorf("GPU count %q must be from 0 to 64", s)
		}
		return c, nil, nil
	}
	var types []string
	for _, t := range strings.Split(kinds, ",") {
		t = strings.TrimSpace(t)
		if !gpuType.MatchString(t) {
			return 0, nil, fmt.Errorf("GPU type %q is not a type name (e.g. H100, A100-80GB)", clip(t))
		}
		types = append(types, t)
	}
	return n, types, nil
}

// containerJob is the job that runs one container of a function.
func containerJob(queue, project, fnName, image string, cpu float64, mem int64, gpus int, types []string, kind function.Kind, ports []int, command []string, r *wire.Runner) jobspec.Job {
	svc := jobspec.Service{
		Name: RunnerService, Image: image, Command: runnerCommand,
		CPU: cpu, MemoryMiB: mem, GPUs: gpus, GPUTypes: types,
	}
	if kind == function.KindREALTIME {
		// WebSocket connections are relayed to the runner's own server,
		// not carried as calls. The agent picks the port (the runner reads
		// LEVERS9_RUNNER_PORT_WS): a fixed one would let a node run one
		// realtime container only.
		svc.Ports = []jobspec.Port{{Name: RealtimePort}}
	}
	if kind == function.KindBOX {
		boxService(&svc, ports, command)
	}
	return jobspec.Job{
		Name:     "fn-" + fnName,
		Queue:    queue,
		Project:  project,
		Services: []jobspec.Service{svc},
		Runner:   r,
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// ProcessConfig configures the process runtime.
type ProcessConfig struct {
	// Root holds the working directories: Root/JOBID/SERVICE. They are
	// kept after the job so that outputs can be collected; the agent
	// cleans up.
	Root   string
	Logger *slog.Logger // nil: discard
	// StopGrace is the grace period when the runtime stops a job itself
	// (timeout, a failed service). Default 10s.
	StopGrace time.Duration
	// DrainTimeout bounds how long output is read after a service's
	// process group is gone, in case an escaped process keeps the pipes
	// open. Default 5s.
	DrainTimeout time.Duration
}

// Process runs every service as a child process of the agent, in its own
// process group and working directory. Services of a job reach each other
// on 127.0.0.1 at the ports in their LEVERS9_* variables.
//
// Resource limits are not enforced: CPU and memory are the scheduler's
// bookkeeping only (cgroups are left to container runtimes, and
// RLIMIT_AS breaks programs that reserve address space, such as CUDA and
// the JVM). GPUs are assigned through CUDA_VISIBLE_DEVICES. Services do not
// survive the agent.
type Process struct {
	cfg ProcessConfig
	log *slog.Logger

	mu   sync.Mutex
	jobs map[string]bool // running job IDs
}

var _ Runtime = (*Process)(nil)

// ProcessHost is where services of the process runtime listen and reach
// each other.
const ProcessHost = "127.0.0.1"

// NewProcess returns a process runtime rooted at cfg.Root, creating it.
func NewProcess(cfg ProcessConfig) (*Process, error) {
	if cfg.Root == "" {
		return nil, errors.New("process runtime: a root directory is required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("process runtime: root: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	cfg.Root = root
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Second
	}
	return &Process{cfg: cfg, log: cfg.Logger.With("runtime", "process"), jobs: map[string]bool{}}, nil
}

// Name implements Runtime.
func (p *Process) Name() string { return "process" }

// Start implements Runtime.
func (p *Process) Start(ctx context.Context, spec JobSpec) (Job, error) {
	if err := validate(spec); err != nil {
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	p.mu.Lock()
	if p.jobs[spec.ID] {
		p.mu.Unlock()
		return nil, fmt.Errorf("start job %s: already running", spec.ID)
	}
	p.jobs[spec.ID] = true
	p.mu.Unlock()

	j, err := p.prepare(spec)
	if err != nil {
		p.release(spec.ID)
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	go j.run()
	return j, nil
}

func (p *Process) release(id string) {
	p.mu.Lock()
	delete(p.jobs, id)
	p.mu.Unlock()
}

// prepare assigns ports, builds environments and working directories.
func (p *Process) prepare(spec JobSpec) (*job, error) {
	ports, err := assignPorts(spec)
	if err != nil {
		return nil, err
	}
	addresses := AddressVars(spec, ProcessHost, ports)
	base := os.Environ()
	j := &job{
		id:        spec.ID,
		log:       p.log.With("job", spec.ID),
		grace:     p.cfg.StopGrace,
		timeout:   spec.Timeout,
		events:    make(chan Event, eventBuffer),
		done:      make(chan struct{}),
		onEnd:     func() { p.release(spec.ID) },
		remaining: len(spec.Services),
		results:   make([]ServiceResult, len(spec.Services)),
	}
	for i, s := range spec.Services {
		dir := filepath.Join(p.cfg.Root, spec.ID, s.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("service %s: working directory: %w", s.Name, err)
		}
		if err := linkMounts(dir, spec.Mounts); err != nil {
			return nil, fmt.Errorf("service %s: %w", s.Name, err)
		}
		j.services = append(j.services, &service{
			job: j, index: i, spec: s, dir: dir, ports: ports[i], drain: p.cfg.DrainTimeout,
			env: serviceEnv(base, spec.ID, s, dir, addresses),
		})
	}
	return j, nil
}

// assignPorts returns every service's host ports, picking free ones for
// port 0. The listeners stay open until all are picked so that no port is
// handed out twice; another program may still take one before the service
// binds it, which then fails to start and says so.
func assignPorts(spec JobSpec) ([][]Port, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	out := make([][]Port, len(spec.Services))
	for i, s := range spec.Services {
		for _, pt := range s.Ports {
			if pt.Port == 0 {
				l, err := net.Listen("tcp", ProcessHost+":0")
				if err != nil {
					return nil, fmt.Errorf("service %s: port %s: %w", s.Name, pt.Name, err)
				}
				held = append(held, l)
				pt.Port = l.Addr().(*net.TCPAddr).Port
			}
			out[i] = append(out[i], pt)
		}
	}
	return out, nil
}

// Names become directory and variable names: keep them plain.
var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

func validate(spec JobSpec) error {
	if !plainName.MatchString(spec.ID) {
		return fmt.Errorf("job ID %q: use letters, digits, '_' and '-'", spec.ID)
	}
	if len(spec.Services) == 0 {
		return errors.New("a job needs at least one service")
	}
	if spec.Timeout < 0 {
		return fmt.Errorf("negative timeout %s", spec.Timeout)
	}
	names := map[string]bool{}
	fixed := map[int]string{}
	for _, s := range spec.Services {
		if !plainName.MatchString(s.Name) {
			return fmt.Errorf("service name %q: use letters, digits, '_' and '-'", s.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("duplicate service %q", s.Name)
		}
		names[s.Name] = true
		if len(s.Command) == 0 {
			return fmt.Errorf("service %s: the process runtime needs a command", s.Name)
		}
		for _, e := range s.Env {
			if e.Name == "" || !plainEnv(e.Name) {
				return fmt.Errorf("service %s: invalid variable name %q", s.Name, e.Name)
			}
		}
		ports := map[string]bool{}
		for _, pt := range s.Ports {
			if !plainName.MatchString(pt.Name) || ports[pt.Name] {
				return fmt.Errorf("service %s: invalid or duplicate port name %q", s.Name, pt.Name)
			}
			ports[pt.Name] = true
			if pt.Port < 0 || pt.Port > 65535 {
				return fmt.Errorf("service %s: port %s: %d is out of range", s.Name, pt.Name, pt.Port)
			}
			if pt.Port > 0 {
				if other, ok := fixed[pt.Port]; ok {
					return fmt.Errorf("service %s: port %d is also declared by %s", s.Name, pt.Port, other)
				}
				fixed[pt.Port] = s.Name
			}
		}
	}
	return CheckAddressNames(spec)
}

func plainEnv(name string) bool {
	for _, r := range name {
		if r == '=' || r == 0 {
			return false
		}
	}
	return true
}

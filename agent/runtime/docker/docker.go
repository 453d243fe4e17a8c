// Package docker runs the services of a job as containers of a Docker
// Engine, through its API. Each attempt of a job of several services gets
// its own bridge network on which every service is a container reachable
// by its service name (jobs of one service share the node's, isolated
// from each other: soloNetwork); limits
// are cgroups, the filesystem goes with the container, and containers
// outlive the agent so that a restarted agent can recover them.
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"golang.org/x/sync/singleflight"

	"github.com/levers9/levers9/agent/runtime"
)

// Config configures the Docker runtime.
type Config struct {
	// NodeID labels every container and network (levers9.node); Recover
	// finds only this node's. Required.
	NodeID string
	// DefaultImage runs services that give a command but no image.
	// Required.
	DefaultImage string
	Logger       *slog.Logger // nil: discard
	// StopGrace is the grace period when the runtime stops a job itself
	// (timeout, a failed service). Default 10s.
	StopGrace time.Duration
	// PidsLimit caps the processes of each container. Default 4096.
	PidsLimit int64
	// Host is the daemon's address; "" takes DOCKER_HOST or the default
	// socket.
	Host string
	// FetchImage gets a blueprint image's export from the server (the
	// agent sets it: SetImageFetcher); nil: blueprint images the node
	// lacks cannot run.
	FetchImage runtime.ImageFetcher
}

// Runtime runs jobs as Docker containers.
type Runtime struct {
	cfg Config
	log *slog.Logger
	cli *client.Client
	// ctx is cancelled by Close: the runtime stops watching its jobs and
	// leaves their containers running.
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	jobs map[string]bool // job IDs running or recovered here

	// soloMu makes the node's network of one-service jobs once.
	soloMu sync.Mutex

	// loads fetches and loads each blueprint image once at a time.
	loads singleflight.Group
}

var (
	_ runtime.Runtime   = (*Runtime)(nil)
	_ runtime.Recoverer = (*Runtime)(nil)
)

// pingTimeout bounds the question whether a daemon answers.
const pingTimeout = 10 * time.Second

// removeTimeout bounds removing a job's containers and network.
const removeTimeout = time.Minute

func newClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

func ping(ctx context.Context, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	_, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err
}

// New connects to the Docker daemon and checks that it answers.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.NodeID == "" {
		return nil, errors.New("docker runtime: a node ID is required")
	}
	if cfg.DefaultImage == "" {
		return nil, errors.New("docker runtime: a default image is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if cfg.PidsLimit <= 0 {
		cfg.PidsLimit = 4096
	}
	cli, err := newClient(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	if err := ping(ctx, cli); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker runtime: no Docker daemon answers at %s: %w", cli.DaemonHost(), err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	return &Runtime{
		cfg: cfg, log: cfg.Logger.With("runtime", "docker"), cli: cli,
		ctx: rctx, cancel: cancel, jobs: map[string]bool{},
	}, nil
}

// Available reports whether a Docker daemon answers at host ("" for the
// environment's or the default socket).
func Available(ctx context.Context, host string) bool {
	cli, err := newClient(host)
	if err != nil {
		return false
	}
	defer cli.Close()
	return ping(ctx, cli) == nil
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "docker" }

// Close stops watching the jobs and closes the connection. Their
// containers keep running for a later Recover; their Events end without
// final states. The node's network of one-service jobs goes too unless a
// container still uses it: a node that never comes back (a test's, one joined again)
// leaves no network behind, and Docker has room for few.
func (r *Runtime) Close() error {
	r.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	r.soloMu.Lock()
	_, err := r.cli.NetworkRemove(ctx, soloNetwork(r.cfg.NodeID), client.NetworkRemoveOptions{})
	r.soloMu.Unlock()
	if err != nil && !cerrdefs.IsNotFound(err) {
		r.log.Debug("the node's network of one-service jobs stays", "err", err)
	}
	return r.cli.Close()
}

// Start implements runtime.Runtime. Whatever an earlier attempt of the job
// left on this node is removed first, so attempts never run side by side.
func (r *Runtime) Start(ctx context.Context, spec runtime.JobSpec) (runtime.Job, error) {
	if spec.Attempt == 0 {
		spec.Attempt = 1
	}
	spec.Attempt = max(spec.Attempt, 1)
	if err := runtime.Validate(spec); err != nil {
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	if err := r.ctx.Err(); err != nil {
		return nil, fmt.Errorf("start job %s: docker runtime closed", spec.ID)
	}
	if !r.claim(spec.ID) {
		return nil, fmt.Errorf("start job %s: already running", spec.ID)
	}
	j, err := r.prepare(ctx, spec)
	if err != nil {
		r.release(spec.ID)
		return nil, fmt.Errorf("start job %s: %w", spec.ID, err)
	}
	go j.run()
	return j, nil
}

func (r *Runtime) claim(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jobs[id] {
		return false
	}
	r.jobs[id] = true
	return true
}

func (r *Runtime) release(id string) {
	r.mu.Lock()
	delete(r.jobs, id)
	r.mu.Unlock()
}

// prepare clears leftovers, assigns ports and creates the network; the
// containers are created as their services start.
func (r *Runtime) prepare(ctx context.Context, spec runtime.JobSpec) (*job, error) {
	if err := r.removeJob(ctx, spec.ID, 0); err != nil {
		return nil, fmt.Errorf("removing leftovers of earlier attempts: %w", err)
	}
	ports, err := runtime.AssignPorts(spec, publishHost)
	if err != nil {
		return nil, err
	}
	if len(spec.Services) == 1 {
		if err := r.ensureSoloNetwork(ctx); err != nil {
			return nil, err
		}
	} else if _, err := r.cli.NetworkCreate(ctx, networkName(spec.ID, spec.Attempt), client.NetworkCreateOptions{
		Driver: "bridge", Labels: jobLabels(r.cfg.NodeID, spec),
	}); err != nil {
		return nil, fmt.Errorf("creating network: %w", err)
	}
	addresses := addressVars(spec, ports)
	j := newJob(r, spec.ID, spec.Attempt, spec.Timeout, len(spec.Services))
	for i, s := range spec.Services {
		env := serviceEnv(spec.ID, s, addresses)
		opts := createOptions(r.cfg, spec, i, ports[i], env)
		j.services = append(j.services, &service{
			job: j, index: i, name: s.Name, image: opts.Config.Image, create: opts,
			ports: ports[i], memoryMiB: s.MemoryMiB,
		})
	}
	return j, nil
}

// ensureSoloNetwork makes the node's network of one-service jobs unless it
// exists (looked at each time: `docker network prune` removes it while no
// container uses it). One that exists with traffic between containers on
// is refused, not used.
func (r *Runtime) ensureSoloNetwork(ctx context.Context) error {
	name := soloNetwork(r.cfg.NodeID)
	r.soloMu.Lock()
	defer r.soloMu.Unlock()
	res, err := r.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	switch {
	case err == nil && res.Network.Options[iccOption] == "false":
		return nil
	case err == nil:
		return fmt.Errorf("network %s exists with traffic between its containers allowed: remove it (levers9 makes it again, isolated)", name)
	case !cerrdefs.IsNotFound(err):
		return fmt.Errorf("inspecting network %s: %w", name, err)
	}
	_, err = r.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver:  "bridge",
		Labels:  map[string]string{labelNode: r.cfg.NodeID, labelShared: "1"},
		Options: map[string]string{iccOption: "false"},
	})
	if err != nil {
		return fmt.Errorf("creating network %s: %w", name, err)
	}
	return nil
}

// removeJob force-removes this node's containers and networks of job id:
// of every attempt but `keep` (0: of every attempt).
func (r *Runtime) removeJob(ctx context.Context, id string, keep int) error {
	f := client.Filters{}.Add("label", labelNode+"="+r.cfg.NodeID, labelJob+"="+id)
	return r.remove(ctx, f, func(labels map[string]string) bool {
		return keep == 0 || labels[labelAttempt] != strconv.Itoa(keep)
	})
}

// removeAttempt force-removes the containers (with their writable layers
// and anonymous volumes) and the network of one job attempt.
func (r *Runtime) removeAttempt(ctx context.Context, id string, attempt int) error {
	f := client.Filters{}.Add("label", labelNode+"="+r.cfg.NodeID, labelJob+"="+id, labelAttempt+"="+strconv.Itoa(attempt))
	return r.remove(ctx, f, func(map[string]string) bool { return true })
}

func (r *Runtime) remove(ctx context.Context, f client.Filters, match func(labels map[string]string) bool) error {
	var errs []error
	cs, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range cs.Items {
		if !match(c.Labels) {
			continue
		}
		_, err := r.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", shortID(c.ID), err))
		}
	}
	ns, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if !match(n.Labels) {
			continue
		}
		if _, err := r.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

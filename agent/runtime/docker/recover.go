package docker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// Recover implements runtime.Recoverer: it finds this node's containers by
// label, one job per job ID. Of a job with several attempts only the
// latest is kept; the others are removed, as are networks left without
// containers.
func (r *Runtime) Recover(ctx context.Context) ([]runtime.Recovered, error) {
	mine := client.Filters{}.Add("label", labelNode+"="+r.cfg.NodeID)
	cs, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: mine})
	if err != nil {
		return nil, fmt.Errorf("recover: listing containers: %w", err)
	}
	jobs := map[string]map[int][]container.Summary{}
	for _, c := range cs.Items {
		id := c.Labels[labelJob]
		attempt, err := strconv.Atoi(c.Labels[labelAttempt])
		if id == "" || err != nil {
			r.log.Warn("container without job labels", "container", shortID(c.ID))
			continue
		}
		if jobs[id] == nil {
			jobs[id] = map[int][]container.Summary{}
		}
		jobs[id][attempt] = append(jobs[id][attempt], c)
	}

	var out []runtime.Recovered
	for id, attempts := range jobs {
		latest := slices.Max(slicesKeys(attempts))
		if !r.claim(id) {
			continue // running here already
		}
		if len(attempts) > 1 {
			if err := r.removeJob(ctx, id, latest); err != nil {
				r.log.Warn("removing earlier attempts", "job", id, "err", err)
			}
		}
		rj, err := r.recoverJob(ctx, id, latest, attempts[latest])
		if err != nil {
			r.release(id)
			return nil, fmt.Errorf("recover job %s: %w", id, err)
		}
		out = append(out, rj)
	}
	r.removeOrphanNetworks(ctx, mine, jobs)
	slices.SortFunc(out, func(a, b runtime.Recovered) int { return cmp.Compare(a.ID(), b.ID()) })
	return out, nil
}

func slicesKeys(m map[int][]container.Summary) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// removeOrphanNetworks removes this node's job networks that have no
// container (an agent that died between creating the network and the
// containers).
func (r *Runtime) removeOrphanNetworks(ctx context.Context, mine client.Filters, jobs map[string]map[int][]container.Summary) {
	ns, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: mine})
	if err != nil {
		r.log.Warn("listing networks", "err", err)
		return
	}
	for _, n := range ns.Items {
		if n.Labels[labelShared] != "" {
			continue // the node's network of one-service jobs: no job's
		}
		attempt, _ := strconv.Atoi(n.Labels[labelAttempt])
		if _, used := jobs[n.Labels[labelJob]][attempt]; used {
			continue
		}
		if _, err := r.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			r.log.Warn("removing network", "network", n.Name, "err", err)
		}
	}
}

// recoverJob rebuilds a job from its containers.
func (r *Runtime) recoverJob(ctx context.Context, id string, attempt int, cs []container.Summary) (*recovered, error) {
	var found []container.InspectResponse
	for _, c := range cs {
		res, err := r.cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspecting container %s: %w", shortID(c.ID), err)
		}
		if res.Container.State == nil || res.Container.Config == nil || res.Container.HostConfig == nil {
			return nil, fmt.Errorf("container %s: incomplete inspection", shortID(c.ID))
		}
		found = append(found, res.Container)
	}
	slices.SortFunc(found, func(a, b container.InspectResponse) int {
		ia, _ := strconv.Atoi(a.Config.Labels[labelIndex])
		ib, _ := strconv.Atoi(b.Config.Labels[labelIndex])
		return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a.Config.Labels[labelService], b.Config.Labels[labelService]))
	})
	var timeout time.Duration
	var names []string
	if len(found) > 0 {
		timeout = parseTimeout(found[0].Config.Labels[labelTimeout])
		if l := found[0].Config.Labels[labelServices]; l != "" {
			names = strings.Split(l, ",")
		}
	}
	byName := map[string]container.InspectResponse{}
	for _, c := range found {
		name := c.Config.Labels[labelService]
		byName[name] = c
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	j := newJob(r, id, attempt, timeout, len(names))
	rec := &recovered{job: j, names: names}
	for i, name := range names {
		s := &service{job: j, index: i, name: name}
		j.services = append(j.services, s)
		c, ok := byName[name]
		if !ok {
			s.missing = true // the old agent died before creating it
			continue
		}
		s.id, s.image, s.memoryMiB = c.ID, c.Config.Image, c.HostConfig.Memory>>20
		s.tty = c.Config.Tty // the container records it: ServiceSpec.TTY
		s.ports = parsePorts(c.Config.Labels[labelPorts])
		switch c.State.Status {
		case container.StateCreated:
			s.created = true
		case container.StateRunning, container.StatePaused, container.StateRestarting:
			s.running = true
			// Frozen by the agent before, cut off from the server: a Stop
			// kills it at once, Thaw unpauses it.
			s.paused = c.State.Status == container.StatePaused
		}
		if started, err := time.Parse(time.RFC3339Nano, c.State.StartedAt); err == nil && started.Year() > 1 {
			if rec.startedAt.IsZero() || started.Before(rec.startedAt) {
				rec.startedAt = started
			}
			if started.After(rec.lastStart) {
				rec.lastStart = started
			}
		}
	}
	if rec.startedAt.IsZero() {
		rec.startedAt, rec.lastStart = time.Now(), time.Now()
	}
	return rec, nil
}

// recovered is a job found again after an agent restart. It emits nothing
// until Resume; stopped before that, it is stopped and removed silently.
type recovered struct {
	*job
	names     []string
	startedAt time.Time // the first service's start
	lastStart time.Time // the timeout runs from here

	beginMu sync.Mutex
	begun   bool
}

var _ runtime.Recovered = (*recovered)(nil)

func (r *recovered) Attempt() int         { return r.attempt }
func (r *recovered) Services() []string   { return slices.Clone(r.names) }
func (r *recovered) StartedAt() time.Time { return r.startedAt }

// begin is true for the first of Resume and Stop.
func (r *recovered) begin() bool {
	r.beginMu.Lock()
	defer r.beginMu.Unlock()
	first := !r.begun
	r.begun = true
	return first
}

// Resume implements runtime.Recovered.
func (r *recovered) Resume(cursor runtime.LogCursor) {
	if !r.begin() {
		return
	}
	r.emitMu.Lock()
	r.seq = cursor.Seq
	r.emitMu.Unlock()
	r.watch(cursor.After)
	if r.timeout > 0 {
		r.startTimeout(time.Until(r.lastStart.Add(r.timeout)))
	}
}

// Stop implements runtime.Job.
func (r *recovered) Stop(reason string, grace time.Duration) {
	if r.begin() {
		r.silent.Store(true)
		r.stop(reason, reason, grace)
		r.watch(nil)
		return
	}
	r.job.Stop(reason, grace)
}

// watch follows every service to its end.
func (r *recovered) watch(after map[string]time.Time) {
	if len(r.services) == 0 {
		go r.end()
		return
	}
	for _, s := range r.services {
		go s.resume(after[s.name])
	}
}

// resume starts a container the old agent created but did not start, or
// follows one that ran or ended meanwhile. A service whose container the
// old agent never created fails.
func (s *service) resume(after time.Time) {
	s.mu.Lock()
	created, reason := s.created, s.stopReason
	s.mu.Unlock()
	if s.missing {
		if reason != "" {
			s.job.finish(s, runtime.Failed, nil, "stopped: "+reason, true)
		} else {
			s.job.finish(s, runtime.Failed, nil, "not started: the agent restarted while starting the job", false)
		}
		return
	}
	if created {
		s.startCreated()
		return
	}
	s.follow(after)
}

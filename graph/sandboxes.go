package graph

import (
	"strconv"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/graph/model"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/relayaddr"
	"github.com/levers9/levers9/internal/sandboxes"
)

// sandboxInput is a sandbox as the domain takes it; gpu is parsed here
// with the grammar functions use.
func sandboxInput(in model.SandboxInput) (sandboxes.Input, error) {
	n, types, err := functions.ParseGPU(deref(in.Gpu))
	if err != nil {
		return sandboxes.Input{}, fault.Invalid("gpu", "%v", err)
	}
	env := make([]jobspec.EnvVar, 0, len(in.Env))
	for _, e := range in.Env {
		if e != nil {
			env = append(env, *e)
		}
	}
	return sandboxes.Input{
		Name: deref(in.Name), Blueprint: deref(in.Blueprint), Image: deref(in.Image),
		Queue: deref(in.Queue), Project: deref(in.Project), CPU: deref(in.CPU),
		MemoryMiB: int64(deref(in.MemoryMiB)), GPUs: n, GPUTypes: types,
		TimeoutSeconds: deref(in.TimeoutSeconds), Ports: in.Ports, Env: env,
	}, nil
}

// Tunnels lists the relay URLs of the declared ports of j's services
// svcs: PUBLIC_URL/relay/JOB/SERVICE/PORT/, none unless j is running.
func Tunnels(publicURL, relayDomain string, j *ent.Job, svcs []*ent.Service) []*model.TunnelURL {
	if j.Status != job.StatusRunning {
		return []*model.TunnelURL{}
	}
	out := []*model.TunnelURL{}
	for _, s := range svcs {
		for _, p := range s.Ports {
			if p.Port <= 0 { // an agent-picked port has no stable URL
				continue
			}
			out = append(out, &model.TunnelURL{
				Port: p.Port,
				URL:  relayaddr.URL(publicURL, relayDomain, j.ID, s.Name, strconv.Itoa(p.Port)),
			})
		}
	}
	return out
}

// executionsMax bounds Job.executions(last:).
const executionsMax = 500

package tunnel

import (
	"sort"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/wire"
)

// startMessage is the Start for j, its services in the order submitted.
func startMessage(j *ent.Job) wire.Start {
	order := map[string]int{}
	tty := map[string]bool{}
	venv := map[string]*wire.Venv{}
	for i, sp := range j.Spec.Services {
		order[sp.Name] = i
		tty[sp.Name] = sp.TTY
		venv[sp.Name] = sp.Venv
	}
	svcs := append([]*ent.Service(nil), j.Edges.Services...)
	sort.SliceStable(svcs, func(a, b int) bool { return order[svcs[a].Name] < order[svcs[b].Name] })
	m := wire.Start{JobID: j.ID, Attempt: j.Attempt, Tenant: j.TenantID, TimeoutSeconds: j.TimeoutSeconds, Runner: j.Spec.Runner, Build: j.Spec.Build}
	for _, svc := range svcs {
		ss := wire.ServiceStart{
			Name: svc.Name, Image: svc.Image, Command: svc.Command, Args: svc.Args,
			CPU: svc.CPU, MemoryMiB: svc.MemoryMib, GPUs: svc.GpuDevices, TTY: tty[svc.Name],
			Venv: venv[svc.Name],
		}
		for _, e := range svc.Env {
			ss.Env = append(ss.Env, wire.EnvVar{Name: e.Name, Value: e.Value})
		}
		for _, p := range svc.Ports {
			ss.Ports = append(ss.Ports, wire.Port{Name: p.Name, Port: p.Port})
		}
		m.Services = append(m.Services, ss)
	}
	return m
}

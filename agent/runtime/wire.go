package runtime

import (
	"strings"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// SpecFromStart is the job a wire.Start asks for.
func SpecFromStart(m wire.Start) JobSpec {
	spec := JobSpec{ID: m.JobID, Attempt: max(m.Attempt, 1), Tenant: m.Tenant, Timeout: time.Duration(m.TimeoutSeconds) * time.Second}
	for _, s := range m.Services {
		ss := ServiceSpec{
			Name: s.Name, Image: s.Image, Command: s.Command, Args: s.Args,
			CPU: s.CPU, MemoryMiB: s.MemoryMiB, GPUs: s.GPUs, TTY: s.TTY, Venv: s.Venv,
		}
		for _, e := range s.Env {
			ss.Env = append(ss.Env, EnvVar{Name: e.Name, Value: e.Value})
		}
		for _, p := range s.Ports {
			ss.Ports = append(ss.Ports, Port{Name: p.Name, Port: p.Port})
		}
		spec.Services = append(spec.Services, ss)
	}
	return spec
}

// Wire is e as a wire message.
func (e StateEvent) Wire() wire.StateChange {
	m := wire.StateChange{
		JobID: e.JobID, Service: e.Service, State: wire.State(e.State),
		ExitCode: e.ExitCode, Reason: truncate(e.Reason, wire.MaxReasonBytes), Time: e.Time,
	}
	for _, p := range e.Ports {
		m.Ports = append(m.Ports, wire.Port{Name: p.Name, Port: p.Port})
	}
	return m
}

// Wire is e as a wire log line (its job ID goes on the wire.Logs).
func (e LogEvent) Wire() wire.LogLine {
	return wire.LogLine{Service: e.Service, Stream: wire.Stream(e.Stream), Seq: e.Seq, Time: e.Time, Text: e.Text}
}

// truncate makes s valid UTF-8 of at most n bytes without splitting a rune.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

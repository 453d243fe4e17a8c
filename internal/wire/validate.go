package wire

import (
	"fmt"
	"math"
	"path"
)

// Validate implements Msg.
func (m Hello) Validate() error {
	c := checker{kind: KindHello}
	c.id("nodeId", m.NodeID)
	if m.AgentVersion == "" || len(m.AgentVersion) > 128 || !printable(m.AgentVersion) {
		c.bad("agentVersion", "must be 1 to 128 printable characters")
	}
	c.nonNegFloat("inventory.cpus", m.Inventory.CPUs)
	c.rangeInt("inventory.memoryMiB", m.Inventory.MemoryMiB, 0, math.MaxInt64)
	seen, devices := map[string]bool{}, map[string]bool{}
	for i, g := range m.Inventory.GPUs {
		f := fmt.Sprintf("inventory.gpus[%d]", i)
		if err := CheckGPUType(g.Type); err != nil {
			c.check(f+".type", err)
		} else if seen[g.Type] {
			c.bad(f+".type", "duplicate GPU type %q", g.Type)
		}
		seen[g.Type] = true
		c.rangeInt(f+".count", int64(g.Count), 1, 1<<20)
		if len(g.Devices) > 0 && len(g.Devices) != g.Count {
			c.bad(f+".devices", "lists %d devices for %d GPUs", len(g.Devices), g.Count)
		}
		for k, d := range g.Devices {
			if !gpuDevice.MatchString(d) || devices[d] {
				c.bad(fmt.Sprintf("%s.devices[%d]", f, k), "%.70q is not a valid or is a repeated GPU device ID", d)
			}
			devices[d] = true
		}
	}
	switch m.Inventory.Runtime {
	case "", RuntimeDocker, RuntimeProcess:
	default:
		c.bad("inventory.runtime", "%.40q is not %s or %s", m.Inventory.Runtime, RuntimeDocker, RuntimeProcess)
	}
	c.running("running", m.Running)
	return c.err()
}

// Validate implements Msg.
func (m Welcome) Validate() error {
	c := checker{kind: KindWelcome}
	c.rangeInt("heartbeatIntervalMs", m.HeartbeatIntervalMs, 1, 3600*1000)
	if m.FenceAfterMs != 0 {
		c.rangeInt("fenceAfterMs", m.FenceAfterMs, 1, 7*24*3600*1000)
	}
	return c.err()
}

// Validate implements Msg.
func (m Heartbeat) Validate() error {
	c := checker{kind: KindHeartbeat}
	c.time("time", m.Time)
	return c.err()
}

// Validate implements Msg.
func (m Start) Validate() error {
	c := checker{kind: KindStart}
	c.id("jobId", m.JobID)
	c.rangeInt("attempt", int64(m.Attempt), 0, MaxAttempt)
	if m.Tenant != "" {
		c.id("tenant", m.Tenant)
	}
	c.rangeInt("timeoutSeconds", int64(m.TimeoutSeconds), 0, MaxTimeout)
	switch {
	case len(m.Services) == 0:
		c.bad("services", "a job needs at least one service")
	case len(m.Services) > MaxServices:
		c.bad("services", "at most %d services", MaxServices)
	}
	names := map[string]bool{}
	addresses := make([]NamedPorts, 0, len(m.Services))
	var fixed []FixedPort
	for i, s := range m.Services {
		f := fmt.Sprintf("services[%d]", i)
		if err := CheckServiceName(s.Name); err != nil {
			c.check(f+".name", err)
		} else if names[s.Name] {
			c.bad(f+".name", "duplicate service %q", s.Name)
		}
		names[s.Name] = true
		c.serviceStart(f, s)
		np := NamedPorts{Service: s.Name}
		for k, p := range s.Ports {
			np.Ports = append(np.Ports, p.Name)
			fixed = append(fixed, FixedPort{Service: i, Port: k, Number: p.Port})
		}
		addresses = append(addresses, np)
	}
	c.fields = append(c.fields, CheckAddressNames(addresses)...)
	c.fields = append(c.fields, CheckFixedPorts(fixed)...)
	c.mounts(m.Mounts)
	if m.TraceParent != "" {
		c.check("traceParent", CheckTraceParent(m.TraceParent))
	}
	return c.err()
}

// MaxAttempt bounds a job's attempt number (retries are at most 100).
const MaxAttempt = 1000

// MaxMounts bounds the mounts of a job.
const MaxMounts = 64

func (c *checker) mounts(ms []Mount) {
	if len(ms) > MaxMounts {
		c.bad("mounts", "at most %d mounts", MaxMounts)
		return
	}
	var paths []string
	for i, m := range ms {
		f := fmt.Sprintf("mounts[%d]", i)
		c.id(f+".bucket", m.Bucket)
		if err := CheckMountPath(m.Path); err != nil {
			c.check(f+".path", err)
		} else {
			for _, p := range paths {
				if MountsOverlap(p, m.Path) {
					c.bad(f+".path", "%q overlaps mount %q", m.Path, p)
					break
				}
			}
			paths = append(paths, m.Path)
		}
		if m.Link != "" && !cleanAbs(m.Link) {
			c.bad(f+".link", "%.70q is not a clean absolute path", m.Link)
		}
	}
}

// cleanAbs reports whether p is an absolute path in its shortest form,
// printable and without NUL bytes.
func cleanAbs(p string) bool {
	return len(p) <= 4096 && path.IsAbs(p) && path.Clean(p) == p && printable(p) && !hasNUL(p)
}

func (c *checker) serviceStart(f string, s ServiceStart) {
	c.check(f+".command", CheckCommand(s.Image, s.Command))
	c.check(f+".image", CheckImage(s.Image))
	c.check(f+".venv", CheckVenv(s.Venv))
	if len(s.Command)+len(s.Args) > MaxWords {
		c.bad(f+".args", "at most %d command words and arguments", MaxWords)
	}
	for _, w := range append(append([]string(nil), s.Command...), s.Args...) {
		if err := CheckWord(w); err != nil {
			c.check(f+".command", err)
			break
		}
	}
	if len(s.Env) > MaxEnv {
		c.bad(f+".env", "at most %d variables", MaxEnv)
	}
	seen := map[string]bool{}
	for k, e := range s.Env {
		ef := fmt.Sprintf("%s.env[%d]", f, k)
		if err := CheckEnvName(e.Name); err != nil {
			c.check(ef+".name", err)
		} else if seen[e.Name] {
			c.bad(ef+".name", "duplicate variable %q", e.Name)
		}
		seen[e.Name] = true
		c.check(ef+".value", CheckEnvValue(e.Value))
	}
	c.ports(f+".ports", s.Ports, false)
	c.nonNegFloat(f+".cpu", s.CPU)
	c.rangeInt(f+".memoryMiB", s.MemoryMiB, 0, math.MaxInt64)
	devs := map[string]bool{}
	for k, d := range s.GPUs {
		gf := fmt.Sprintf("%s.gpus[%d]", f, k)
		switch {
		case !gpuDevice.MatchString(d):
			c.bad(gf, "%.70q is not a valid GPU device ID", d)
		case devs[d]:
			c.bad(gf, "duplicate GPU %q", d)
		}
		devs[d] = true
	}
}

// Validate implements Msg.
func (m Stop) Validate() error {
	c := checker{kind: KindStop}
	c.id("jobId", m.JobID)
	c.text("reason", m.Reason, MaxReasonBytes)
	c.rangeInt("graceSeconds", int64(m.GraceSeconds), 0, MaxGrace)
	return c.err()
}

// Validate implements Msg.
func (m StateChange) Validate() error {
	c := checker{kind: KindStateChange}
	c.id("jobId", m.JobID)
	c.rangeInt("attempt", int64(m.Attempt), 0, MaxAttempt)
	c.service("service", m.Service)
	switch m.State {
	case StateStarting, StateRunning:
		if m.ExitCode != nil {
			c.bad("exitCode", "only a final state has an exit code")
		}
	case StateExited:
		if m.ExitCode == nil || *m.ExitCode != 0 {
			c.bad("exitCode", "EXITED means exit code 0; other codes are FAILED")
		}
	case StateFailed:
		if m.ExitCode != nil {
			c.rangeInt("exitCode", int64(*m.ExitCode), 0, 255)
		}
	default:
		c.bad("state", "%.40q is not one of STARTING, RUNNING, EXITED, FAILED", m.State)
	}
	c.text("reason", m.Reason, MaxReasonBytes)
	c.ports("ports", m.Ports, true)
	c.time("time", m.Time)
	return c.err()
}

// Validate implements Msg.
func (m Logs) Validate() error {
	c := checker{kind: KindLogs}
	c.id("jobId", m.JobID)
	c.rangeInt("attempt", int64(m.Attempt), 0, MaxAttempt)
	if len(m.Lines) == 0 {
		c.bad("lines", "at least one line is required")
	}
	// Each line is checked under field names without its index, which is
	// prefixed to the few that fail: naming the fields of every line of a
	// 10,000-line message cost more than checking them.
	var lc checker
	for i, l := range m.Lines {
		lc.fields = lc.fields[:0]
		lc.service(".service", l.Service)
		if l.Stream != Stdout && l.Stream != Stderr && l.Stream != System {
			lc.bad(".stream", "%.40q is not stdout, stderr or system", l.Stream)
		}
		switch {
		case l.Seq == 0:
			lc.bad(".seq", "sequence numbers start at 1")
		case i > 0 && l.Seq != m.Lines[i-1].Seq+1:
			lc.bad(".seq", "is %d after %d: lines of a message must be contiguous", l.Seq, m.Lines[i-1].Seq)
		}
		lc.time(".time", l.Time)
		lc.text(".text", l.Text, MaxLogLineBytes)
		for _, fe := range lc.fields {
			c.fields = append(c.fields, FieldError{Field: fmt.Sprintf("lines[%d]", i) + fe.Field, Message: fe.Message})
		}
	}
	return c.err()
}

// Validate implements Msg.
func (m Reconcile) Validate() error {
	c := checker{kind: KindReconcile}
	c.running("running", m.Running)
	return c.err()
}

// Validate implements Msg.
func (m Ack) Validate() error {
	c := checker{kind: KindAck}
	if m.Seq == 0 {
		c.bad("seq", "is required")
	}
	c.text("error", m.Error, MaxReasonBytes)
	return c.err()
}

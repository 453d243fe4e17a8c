package docker

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// Labels on every container and network of a job. Recover finds a node's
// containers by labelNode; the rest say whose they are.
const (
	labelNode    = "levers9.node"
	labelTenant  = "levers9.tenant"
	labelJob     = "levers9.job"
	labelAttempt = "levers9.attempt"
	labelService = "levers9.service"
	// For a restarted agent: the service's place in the spec, its ports
	// and the job's timeout.
	labelIndex    = "levers9.index"
	labelServices = "levers9.services" // all of the job's, in order
	labelPorts    = "levers9.ports"
	labelTimeout  = "levers9.timeout"
)

// publishHost is where declared ports are published on the node.
const publishHost = "127.0.0.1"

// Names become container, network and host names: keep them plain.

// networkName and containerName name a job attempt's objects, so a retried
// attempt never collides with what an earlier one left.
func networkName(jobID string, attempt int) string {
	return fmt.Sprintf("levers9-%s-%d", jobID, attempt)
}

// labelShared marks the node's network of one-service jobs: no job's, so
// never removed with one.
const labelShared = "levers9.shared"

// iccOption turns off traffic between the containers of a bridge network.
const iccOption = "com.docker.network.bridge.enable_icc"

// soloNetwork is the node's network of jobs with one service. Such a job
// has no other service to reach by name, and a network of its own costs
// its start a network creation and the daemon's setup of a new bridge
// (as long as starting the container itself): they share one bridge,
// made once, with traffic between its containers off, so a job reaches
// no other job's container there either (as from a network of its own).
func soloNetwork(nodeID string) string {
	return "levers9-solo-" + nodeID
}

// jobNetwork is the network of spec's containers: its own (every service
// reached by its name) when it has several services, else soloNetwork.
func jobNetwork(nodeID string, spec runtime.JobSpec) string {
	if len(spec.Services) == 1 {
		return soloNetwork(nodeID)
	}
	return networkName(spec.ID, spec.Attempt)
}

func containerName(jobID string, attempt int, service string) string {
	return fmt.Sprintf("levers9-%s-%d-%s", jobID, attempt, service)
}

func jobLabels(nodeID string, spec runtime.JobSpec) map[string]string {
	return map[string]string{
		labelNode:    nodeID,
		labelTenant:  spec.Tenant,
		labelJob:     spec.ID,
		labelAttempt: strconv.Itoa(spec.Attempt),
	}
}

// addressVars are the LEVERS9_<SERVICE>_HOST/_PORT_<NAME> variables: each
// service is reached by its name on the job's network.
func addressVars(spec runtime.JobSpec, ports [][]runtime.Port) []string {
	var vars []string
	for i, s := range spec.Services {
		one := runtime.JobSpec{Services: []runtime.ServiceSpec{s}}
		vars = append(vars, runtime.AddressVars(one, s.Name, [][]runtime.Port{ports[i]})...)
	}
	return vars
}

// serviceEnv is the spec's variables, then what levers9 sets, which wins.
// Nothing comes from the agent's own environment; the image supplies PATH
// and the like.
func serviceEnv(jobID string, s runtime.ServiceSpec, addresses []string) []string {
	var env []string
	index := map[string]int{}
	set := func(name, value string) {
		kv := name + "=" + value
		if i, ok := index[name]; ok {
			env[i] = kv
			return
		}
		index[name] = len(env)
		env = append(env, kv)
	}
	for _, e := range s.Env {
		set(e.Name, e.Value)
	}
	for _, e := range s.SystemEnv {
		set(e.Name, e.Value)
	}
	set("LEVERS9_JOB_ID", jobID)
	set("LEVERS9_SERVICE", s.Name)
	for _, kv := range addresses {
		name, value, _ := strings.Cut(kv, "=")
		set(name, value)
	}
	return env
}

// createOptions is the container for service s: on the job's network under
// its own name, limited, unprivileged, with exactly the job's mounts.
func createOptions(cfg Config, spec runtime.JobSpec, i int, ports []runtime.Port, env []string) client.ContainerCreateOptions {
	s := spec.Services[i]
	image := s.Image
	if image == "" {
		image = cfg.DefaultImage
	}
	labels := jobLabels(cfg.NodeID, spec)
	labels[labelService] = s.Name
	labels[labelIndex] = strconv.Itoa(i)
	names := make([]string, len(spec.Services))
	for k, other := range spec.Services {
		names[k] = other.Name
	}
	labels[labelServices] = strings.Join(names, ",")
	labels[labelPorts] = formatPorts(ports)
	// Always set: an image's own label of that name must not supply it.
	labels[labelTimeout] = spec.Timeout.String()

	conf := &container.Config{
		Image:    image,
		Hostname: s.Name,
		Env:      env,
		Labels:   labels,
	}
	if s.TTY {
		// Like `docker run -it`: a pseudo-terminal whose input stays open
		// across attaches; the runtime attaches before the start, so the
		// first prompt is kept for replay (screen.go).
		conf.Tty, conf.OpenStdin, conf.StdinOnce = true, true, false
		conf.AttachStdin, conf.AttachStdout, conf.AttachStderr = true, true, true
	}
	// Like `docker run --entrypoint`: a command replaces the image's
	// entrypoint and command; args alone replace only its command.
	if len(s.Command) > 0 {
		conf.Entrypoint = slices.Clone(s.Command)
		conf.Cmd = slices.Clone(s.Args)
	} else if len(s.Args) > 0 {
		conf.Cmd = slices.Clone(s.Args)
	}

	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(jobNetwork(cfg.NodeID, spec)),
		SecurityOpt: []string{"no-new-privileges"},
		// Raw sockets would let a job forge frames on the node's shared
		// network of one-service jobs (ARP replies claiming a neighbour's
		// address); traffic between its containers is off, but only at
		// the IP layer. ping still works: Docker opens ICMP sockets.
		CapDrop: []string{"CAP_NET_RAW"},
		Init:    new(true), // docker-init reaps zombies and passes signals on
		// Read back by the runtime (and after an agent restart); bounded.
		LogConfig: container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "100m", "max-file": "3"}},
		Resources: container.Resources{
			NanoCPUs:  int64(s.CPU * 1e9),
			Memory:    s.MemoryMiB << 20,
			PidsLimit: &cfg.PidsLimit,
		},
	}
	if s.MemoryMiB > 0 {
		host.MemorySwap = host.Memory // no swap
	}
	if len(s.GPUs) > 0 {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver: "nvidia", DeviceIDs: slices.Clone(s.GPUs), Capabilities: [][]string{{"gpu"}},
		}}
	}
	if len(ports) > 0 {
		conf.ExposedPorts = network.PortSet{}
		host.PortBindings = network.PortMap{}
		for _, pt := range ports {
			p, _ := network.PortFrom(uint16(pt.Port), network.TCP)
			conf.ExposedPorts[p] = struct{}{}
			host.PortBindings[p] = []network.PortBinding{{
				HostIP: netip.MustParseAddr(publishHost), HostPort: strconv.Itoa(pt.Port),
			}}
		}
	}
	for _, m := range spec.Mounts {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Dir, Target: m.Path, ReadOnly: m.ReadOnly})
	}
	net := jobNetwork(cfg.NodeID, spec)
	endpoint := &network.EndpointSettings{Aliases: []string{s.Name}}
	if net == soloNetwork(cfg.NodeID) {
		// Every job's service would answer to its name there; its own
		// container finds itself by its host name.
		endpoint.Aliases = nil
	}
	return client.ContainerCreateOptions{
		Name:             containerName(spec.ID, spec.Attempt, s.Name),
		Config:           conf,
		HostConfig:       host,
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{net: endpoint}},
	}
}

// formatPorts and parsePorts keep a service's ports in a label
// ("http=8080,admin=9000") for a restarted agent.
func formatPorts(ports []runtime.Port) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s=%d", p.Name, p.Port)
	}
	return strings.Join(parts, ",")
}

func parsePorts(s string) []runtime.Port {
	var ports []runtime.Port
	for part := range strings.SplitSeq(s, ",") {
		name, num, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(num)
		if ok && err == nil {
			ports = append(ports, runtime.Port{Name: name, Port: n})
		}
	}
	return ports
}

// memoryLimit says a limit the way people write it: 8 GiB, 512 MiB.
func memoryLimit(mib int64) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// parseTimeout reads labelTimeout; anything unreadable is no timeout.
func parseTimeout(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

package runtime

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// AssignPorts returns every service's host ports, picking a free one on
// host for each port 0 (container runtimes use the picked number inside the
// container too, so the LEVERS9_* variables hold one number that works
// from the node and from siblings). The listeners stay open until all are
// picked so that no port is handed out twice; another program may still
// take one before the service binds it, which then fails to start and says
// so. Picked ports lie below the kernel's ephemeral range (see hostPorts),
// where outbound connections never take them.
func AssignPorts(spec JobSpec, host string) ([][]Port, error) {
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
				l, err := hostPorts().listen(host)
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

// hostPorts picks the ports of every job this agent runs. The kernel's
// own choice (port 0) comes from the ephemeral range, the one every
// outbound connection on the node also takes its local port from: between
// AssignPorts closing its listener and the service binding the port, a
// connection to a database or a registry may take it, and the service
// fails with "address in use". Below that range only listeners compete,
// and listen sees them. Made on first use: the binary that runs nodes is
// also the CLI, which never picks a port.
var hostPorts = sync.OnceValue(func() *portPicker { return newPortPicker(readEphemeralStart()) })

// portSpan is how many ports below the ephemeral range services get:
// 20000-32767 with Linux's default range, 12,768 ports.
const portSpan = 12768

// portPicker walks its range in a random order, shuffled again for each
// walk: a port just handed out comes back only after every other one was,
// which covers the moment a service starts (a running service's listener
// makes listen skip its port), and a job cannot tell the next job's port
// from its own to bind it first on the process runtime, where jobs share
// the node's loopback.
type portPicker struct {
	mu    sync.Mutex
	lo    int
	order []uint16 // offsets from lo; empty: no range, the kernel picks
	next  int      // index into order; 0 starts a walk
}

// newPortPicker picks from the portSpan ports below ephemeralStart, or
// leaves the choice to the kernel when fewer than 1,024 unprivileged ports
// lie there (a node whose ephemeral range starts low).
func newPortPicker(ephemeralStart int) *portPicker {
	lo, hi := max(1024, ephemeralStart-portSpan), ephemeralStart-1
	if hi-lo+1 < 1024 {
		return &portPicker{}
	}
	return pickerFor(lo, hi)
}

// pickerFor walks the ports lo to hi, inclusive.
func pickerFor(lo, hi int) *portPicker {
	p := &portPicker{lo: lo, order: make([]uint16, hi-lo+1)}
	for i := range p.order {
		p.order[i] = uint16(i)
	}
	return p
}

// maxTries bounds the ports tried before the kernel picks: a range this
// busy is a node running thousands of services.
const maxTries = 64

// listen listens on a free port of the range on host, or on one the
// kernel picks when the range has none free after maxTries.
func (p *portPicker) listen(host string) (net.Listener, error) {
	if len(p.order) > 0 {
		for range maxTries {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p.take())))
			if err == nil {
				return l, nil
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				return nil, err
			}
		}
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// take returns the next port of the walk, shuffling at its start.
func (p *portPicker) take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == 0 {
		rand.Shuffle(len(p.order), func(i, j int) { p.order[i], p.order[j] = p.order[j], p.order[i] })
	}
	port := p.lo + int(p.order[p.next])
	p.next = (p.next + 1) % len(p.order)
	return port
}

// readEphemeralStart is the first port of Linux's ephemeral range; 0 (no
// range of our own) where the file is missing or unreadable.
func readEphemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	return parseEphemeralStart(string(b))
}

// parseEphemeralStart reads the first number of ip_local_port_range
// ("32768\t60999\n"); 0 when it is not one.
func parseEphemeralStart(s string) int {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return 0
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 1 || n > 65535 {
		return 0
	}
	return n
}

package runtime

import (
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
)

func TestParseEphemeralStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"32768\t60999\n", 32768},
		{"1024 65535", 1024},
		{"", 0},
		{"32768", 0},
		{"a 60999", 0},
		{"0 60999", 0},
		{"70000 80000", 0},
		{"1 2 3", 0},
	} {
		if got := parseEphemeralStart(tc.in); got != tc.want {
			t.Errorf("parseEphemeralStart(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

func TestPortPickerRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		start, lo, hi int
	}{
		{32768, 20000, 32767}, // Linux's default
		{49152, 36384, 49151}, // the IANA range
		{10000, 1024, 9999},   // clamped to unprivileged ports
		{2000, 1, 0},          // under 1,024 ports left: the kernel picks
		{0, 1, 0},             // no /proc
	} {
		p := newPortPicker(tc.start)
		if tc.hi < tc.lo {
			if len(p.order) != 0 {
				t.Errorf("newPortPicker(%d) has a range of %d ports; want none", tc.start, len(p.order))
			}
			continue
		}
		walk := takeWalk(p)
		if len(walk) != tc.hi-tc.lo+1 || walk[0] != tc.lo || walk[len(walk)-1] != tc.hi {
			t.Errorf("newPortPicker(%d) walks %d ports from %d to %d; want [%d, %d]", tc.start, len(walk), walk[0], walk[len(walk)-1], tc.lo, tc.hi)
		}
	}
}

// TestPortPickerWalks: a walk takes every port of the range once, in an
// order that is no walk's before it, so a job cannot tell the next port
// from its own.
func TestPortPickerWalks(t *testing.T) {
	t.Parallel()
	p := pickerFor(20000, 21023)
	var first, second []int
	for range 1024 {
		first = append(first, p.take())
	}
	for range 1024 {
		second = append(second, p.take())
	}
	for _, walk := range [][]int{first, second} {
		sorted := slices.Sorted(slices.Values(walk))
		if sorted[0] != 20000 || sorted[1023] != 21023 || len(slices.Compact(sorted)) != 1024 {
			t.Fatal("a walk did not take each port of its range once")
		}
	}
	if slices.IsSorted(first) || slices.Equal(first, second) {
		t.Fatal("the walks are in a predictable order")
	}
}

// takeWalk takes one walk of p's range, sorted.
func takeWalk(p *portPicker) []int {
	walk := make([]int, len(p.order))
	for i := range walk {
		walk[i] = p.take()
	}
	slices.Sort(walk)
	return walk
}

// TestPortPickerSkipsTakenPorts: a port some program listens on is
// passed over.
func TestPortPickerSkipsTakenPorts(t *testing.T) {
	t.Parallel()
	// Two adjacent ports this test holds, then frees the second: every
	// walk tries the first too, and must skip it.
	a, b := adjacentPorts(t)
	defer a.Close()
	port := a.Addr().(*net.TCPAddr).Port
	b.Close()
	p := pickerFor(port, port+1)
	for range 16 {
		l, err := p.listen(ProcessHost)
		if err != nil {
			t.Fatal(err)
		}
		got := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if got != port+1 {
			t.Fatalf("picked %d; want %d (%d is taken)", got, port+1, port)
		}
	}
}

// TestPortPickerFallsBack: with every port of its range taken the kernel
// picks one.
func TestPortPickerFallsBack(t *testing.T) {
	t.Parallel()
	a, b := adjacentPorts(t)
	defer a.Close()
	defer b.Close()
	port := a.Addr().(*net.TCPAddr).Port
	p := pickerFor(port, port+1)
	l, err := p.listen(ProcessHost)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.Addr().(*net.TCPAddr).Port; got == port || got == port+1 {
		t.Fatalf("picked taken port %d", got)
	}
}

// TestAssignPortsBelowEphemeral: on Linux, picked ports lie outside the
// range outbound connections take theirs from, distinct within a job.
func TestAssignPortsBelowEphemeral(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/sys/net/ipv4/ip_local_port_range"); err != nil {
		t.Skip("no ephemeral range to stay out of here")
	}
	start := readEphemeralStart()
	spec := JobSpec{ID: "job_ports", Services: []ServiceSpec{
		{Name: "a", Ports: []Port{{Name: "http"}, {Name: "fixed", Port: 40001}}},
		{Name: "b", Ports: []Port{{Name: "http"}, {Name: "grpc"}}},
	}}
	ports, err := AssignPorts(spec, ProcessHost)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for i, s := range spec.Services {
		for k, pt := range ports[i] {
			if pt.Name != s.Ports[k].Name {
				t.Fatalf("service %s port %d is %q; want %q", s.Name, k, pt.Name, s.Ports[k].Name)
			}
			if s.Ports[k].Port != 0 {
				if pt.Port != s.Ports[k].Port {
					t.Fatalf("fixed port %s became %d", pt.Name, pt.Port)
				}
				continue
			}
			if pt.Port >= start || pt.Port < 1024 {
				t.Errorf("service %s port %s is %d; want one in [1024, %d)", s.Name, pt.Name, pt.Port, start)
			}
			if seen[pt.Port] {
				t.Errorf("port %d handed out twice", pt.Port)
			}
			seen[pt.Port] = true
		}
	}
}

// adjacentPorts listens on two neighbouring ports of the loopback
// address, taken from the range hostPorts uses where it has one: a port
// the test frees there stays free of outbound connections.
func adjacentPorts(t *testing.T) (net.Listener, net.Listener) {
	t.Helper()
	p := hostPorts()
	if len(p.order) == 0 {
		p = pickerFor(20000, 32767)
	}
	for range 100 {
		a, err := p.listen(ProcessHost)
		if err != nil {
			t.Fatal(err)
		}
		port := a.Addr().(*net.TCPAddr).Port
		if port < 65535 {
			if b, err := net.Listen("tcp", net.JoinHostPort(ProcessHost, strconv.Itoa(port+1))); err == nil {
				return a, b
			}
		}
		a.Close()
	}
	t.Fatal("found no two free neighbouring ports")
	return nil, nil
}

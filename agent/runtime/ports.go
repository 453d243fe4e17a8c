package runtime

import (
	"fmt"
	"net"
)

// AssignPorts returns every service's host ports, picking a free one on
// host for each port 0 (container runtimes use the picked number inside the
// container too, so the LEVERS9_* variables hold one number that works
// from the node and from siblings). The listeners stay open until all are
// picked so that no port is handed out twice; another program may still
// take one before the service binds it, which then fails to start and says
// so.
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
				l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
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

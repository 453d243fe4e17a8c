package jobs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
)

func TestHostPort(t *testing.T) {
	t.Parallel()
	// As a container runtime maps them: declared 80 and 9000 to host
	// ports 31000 and 80 (a host port may equal another's declared one).
	web := &ent.Service{Name: "web",
		Ports:     []jobspec.Port{{Name: "http", Port: 80}, {Name: "metrics", Port: 9000}, {Name: "debug"}},
		HostPorts: []jobspec.Port{{Name: "http", Port: 31000}, {Name: "metrics", Port: 80}, {Name: "debug", Port: 31002}}}
	bare := &ent.Service{Name: "worker"}
	cases := []struct {
		name, port string
		sv         *ent.Service
		want       int
		missing    []string // what the refusal names
	}{
		{"by name", "http", web, 31000, nil},
		{"a port declared without a number, by name", "debug", web, 31002, nil},
		{"by declared number", "9000", web, 80, nil},
		{"a declared number wins over an equal host port", "80", web, 31000, nil},
		{"by host port", "31002", web, 31002, nil},
		{"by host port, not declared", "31000", web, 31000, nil},
		{"an unknown name names the ports", "grpc", web, 0, []string{`"grpc"`, "http (31000)", "metrics (80)", "debug (31002)"}},
		{"an unknown number", "8080", web, 0, []string{`"8080"`, "http (31000)"}},
		{"number zero", "0", web, 0, []string{`"0"`}},
		{"a service without ports", "http", bare, 0, []string{"declares no ports"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := jobs.HostPort(tc.sv, tc.port)
			if tc.missing == nil {
				if err != nil || got != tc.want {
					t.Fatalf("HostPort(%q) = %d, %v; want %d", tc.port, got, err, tc.want)
				}
				return
			}
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.NotFound {
				t.Fatalf("HostPort(%q) = %d, %v; want NOT_FOUND", tc.port, got, err)
			}
			for _, s := range tc.missing {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("refusal %q does not name %s", err, s)
				}
			}
		})
	}
}

package graph_test

import (
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/jobspec"
)

// Job.tunnels point where the dashboard's links do: the relay path, or
// the relay domain when the server has one.
func TestTunnelURLs(t *testing.T) {
	t.Parallel()
	j := &ent.Job{ID: "job_1", Status: job.StatusRunning}
	svcs := []*ent.Service{{Name: "sandbox", Ports: []jobspec.Port{{Name: "p8888", Port: 8888}}}}
	for _, tc := range []struct{ domain, want string }{
		{"", "https://lv.example/relay/job_1/sandbox/8888/"},
		{"relay.example", "https://8888-sandbox-job_1.relay.example/"},
	} {
		got := graph.Tunnels("https://lv.example", tc.domain, j, svcs)
		if len(got) != 1 || got[0].URL != tc.want || got[0].Port != 8888 {
			t.Errorf("domain %q: %+v; want %s", tc.domain, got, tc.want)
		}
	}
	if got := graph.Tunnels("https://lv.example", "", &ent.Job{ID: "job_1", Status: job.StatusPending}, svcs); len(got) != 0 {
		t.Errorf("a job not running has tunnels %+v", got)
	}
}

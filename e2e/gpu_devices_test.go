package e2e

import (
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// A node declared with --gpu H100:2 reports devices 0 and 1. Two 1-GPU jobs
// placed there at once are booked different devices, see exactly theirs in
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, and show them on the
// service and as booked on the node; a third waits with a reason until one
// ends, then gets the freed device.
func TestGPUsBookedByDevice(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url, "LEVERS9_LOCAL_NODE=false")
		c := s.credentials()
		grant(t, s.URL, c.Token)
		var q struct {
			Queues struct {
				Edges []struct{ Node struct{ ID string } }
			}
		}
		gql(t, s.URL, c.Token, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, nil, &q)
		gql(t, s.URL, c.Token, `mutation($id: ID!) { updateQueue(id: $id, input: {gpuPrices: [{type: "H100", perMinute: 1}]}) { id } }`,
			map[string]any{"id": q.Queues.Edges[0].Node.ID}, new(map[string]any))
		joinAgent(t, s, c.Token, "gpu-node", "--runtime", "process", "--gpu", "H100:2")

		submit := func(script string) string {
			var sub struct{ SubmitJob struct{ ID string } }
			gql(t, s.URL, c.Token, `mutation($c: [String!]!) { submitJob(spec: {queue: "default",
				services: [{name: "main", command: $c, cpu: 0.5, memoryMiB: 64, gpus: 1, gpuTypes: ["H100"]}]}) { id } }`,
				map[string]any{"c": []string{"sh", "-c", script}}, &sub)
			return sub.SubmitJob.ID
		}
		// Each job holds its device until it is cancelled.
		hold := `echo "cuda=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES"; exec sleep 600`
		a, b := submit(hold), submit(hold)
		seen := map[string]string{}
		for _, id := range []string{a, b} {
			poll(t, "the job's device line", func() bool {
				for _, l := range jobLogs(t, s.URL, c.Token, id, 0) {
					if strings.HasPrefix(l.Text, "cuda=") {
						seen[id] = l.Text
						return true
					}
				}
				return false
			})
		}
		if seen[a] == seen[b] {
			t.Fatalf("both jobs see %q; want different devices", seen[a])
		}
		for _, id := range []string{a, b} {
			dev := strings.TrimPrefix(strings.Fields(seen[id])[0], "cuda=")
			if (dev != "0" && dev != "1") || seen[id] != "cuda="+dev+" nvidia="+dev {
				t.Fatalf("job %s sees %q; want one of devices 0 and 1 in both variables", id, seen[id])
			}
			var svc struct {
				Node struct {
					Services []struct{ GpuDevices []string }
				}
			}
			gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { services { gpuDevices } } } }`, map[string]any{"id": id}, &svc)
			if got := svc.Node.Services[0].GpuDevices; len(got) != 1 || got[0] != dev {
				t.Fatalf("job %s: service booked %v, sees %s", id, got, dev)
			}
		}
		var nodes struct {
			Nodes struct {
				Edges []struct {
					Node struct {
						Booked, Free struct {
							Gpus []struct {
								Type    string
								Count   int
								Devices []string
							}
						}
					}
				}
			}
		}
		gql(t, s.URL, c.Token, `{ nodes { edges { node { booked { gpus { type count devices } } free { gpus { type count devices } } } } } }`, nil, &nodes)
		n := nodes.Nodes.Edges[0].Node
		if len(n.Booked.Gpus) != 1 || n.Booked.Gpus[0].Count != 2 || len(n.Free.Gpus) > 0 && n.Free.Gpus[0].Count != 0 {
			t.Fatalf("node booked %+v, free %+v; want both H100 booked", n.Booked, n.Free)
		}

		third := submit(`echo "cuda=$CUDA_VISIBLE_DEVICES"`)
		poll(t, "the third job to wait with a reason", func() bool {
			j := jobByID(t, s.URL, c.Token, third)
			return j.Status == "PENDING" && strings.Contains(j.StatusReason, "H100")
		})
		if _, _, code := cli(t, s, c.Token, "cancel", a); code != 0 {
			t.Fatalf("cancel %s: exit %d", a, code)
		}
		poll(t, "the third job to run on the freed device", func() bool {
			return jobByID(t, s.URL, c.Token, third).Status == "COMPLETE"
		})
		freed := strings.TrimPrefix(strings.Fields(seen[a])[0], "cuda=")
		lines := jobLogs(t, s.URL, c.Token, third, 0)
		if len(lines) == 0 || lines[len(lines)-1].Text != "cuda="+freed {
			t.Fatalf("third job's log %+v; want cuda=%s", lines, freed)
		}
		cli(t, s, c.Token, "cancel", b)
	})
}

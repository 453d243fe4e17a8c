package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dockertest"
)

var jobIDLine = regexp.MustCompile(`^(job_\w+)\n$`)

// levers9 run's flags against a real server whose built-in node runs
// Docker: --image (with and without a command), --env, --timeout,
// --gpus N[:TYPE] (N alone only when the queue offers one type), -d and
// levers9 submit (the job ID on stdout, nothing else), exit codes 0, 1
// (the server refused) and 2 (bad usage); and levers9 nodes showing the
// runtime and what a running job books.
func TestCLIRunFlags(t *testing.T) {
	t.Parallel()
	image := dockertest.Busybox(t)
	s := startServer(t, t.TempDir(), "", "LEVERS9_LOCAL_NODE_RUNTIME=docker", "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE="+image)
	token := s.credentials().Token
	waitLocalNode(t, s.URL, token)
	env := []string{"LEVERS9_SERVER=" + s.URL, "LEVERS9_TOKEN=" + token, "LEVERS9_CONFIG=" + t.TempDir() + "/none"}
	expect := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := clientRun(t, env, "", args...)
		if code != wantCode {
			t.Fatalf("levers9 %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, errOut)
		}
		return out, errOut
	}
	detached := func(args ...string) string {
		t.Helper()
		out, errOut := expect(0, args...)
		m := jobIDLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("levers9 %v printed %q (stderr %q), want only the job ID", args, out, errOut)
		}
		return m[1]
	}
	type service struct {
		Image, Status string
		CPU           float64
		MemoryMiB     int
		Gpus          int
		GpuTypes      []string
		Env           []struct{ Name, Value string }
	}
	type job struct {
		Status, StatusReason string
		TimeoutSeconds       int
		Services             []service
	}
	jobOf := func(id string) job {
		t.Helper()
		var out struct{ Node job }
		gql(t, s.URL, token, `query($id: ID!) { node(id: $id) { ... on Job { status statusReason timeoutSeconds
			services { image status cpu memoryMib gpus gpuTypes env { name value } } } } }`, map[string]any{"id": id}, &out)
		return out.Node
	}

	t.Run("image, env and a command", func(t *testing.T) {
		out, _ := expect(0, "run", "--image", image, "--env", "GREETING=hello there", "--env", "EMPTY=",
			"--", "sh", "-c", `echo "$GREETING|$EMPTY|$LEVERS9_SERVICE"`)
		if out != "hello there||main\n" {
			t.Fatalf("output %q", out)
		}
	})
	t.Run("image alone runs its own command", func(t *testing.T) {
		out, _ := expect(0, "run", "--image", image)
		if !strings.Contains(out, dockertest.BusyboxGreeting) {
			t.Fatalf("output %q, want the image's greeting %q", out, dockertest.BusyboxGreeting)
		}
	})
	t.Run("run exits with the job's code", func(t *testing.T) {
		_, errOut := expect(5, "run", "--", "sh", "-c", "exit 5")
		if !strings.Contains(errOut, "failed") {
			t.Fatalf("stderr %q", errOut)
		}
	})
	t.Run("detached", func(t *testing.T) {
		id := detached("run", "-d", "--timeout", "1m30s", "--cpu", "0.25", "--memory", "64", "--", "sh", "-c", "exit 4")
		poll(t, "the detached job to end", func() bool { return jobOf(id).Status == "ERROR" })
		j := jobOf(id)
		if j.TimeoutSeconds != 90 || j.Services[0].CPU != 0.25 || j.Services[0].MemoryMiB != 64 {
			t.Fatalf("job %+v, want a timeout of 90 s, 0.25 CPU and 64 MiB", j)
		}
		id = detached("submit", "--timeout", "45", "--image", image, "--", "true")
		poll(t, "the submitted job to complete", func() bool { return jobOf(id).Status == "COMPLETE" })
		if j := jobOf(id); j.TimeoutSeconds != 45 || j.Services[0].Image != image {
			t.Fatalf("job %+v, want a timeout of 45 s and image %s", j, image)
		}
		detached("submit", "-d", "--", "true") // -d is harmless on submit
	})
	t.Run("timeout stops the job", func(t *testing.T) {
		_, errOut, code := clientRun(t, env, "", "run", "--timeout", "1", "--", "sleep", "60")
		if code == 0 || !strings.Contains(errOut, "failed") {
			t.Fatalf("run --timeout 1 -- sleep 60: exit %d, stderr %q; want a failure", code, errOut)
		}
	})
	t.Run("queue defaults fill what the job names not", func(t *testing.T) {
		id := detached("submit", "--", "true")
		poll(t, "the job to end", func() bool { return jobOf(id).Status == "COMPLETE" })
		if svc := jobOf(id).Services[0]; svc.CPU != 1 || svc.MemoryMiB != 1024 {
			t.Fatalf("service %+v, want the default queue's 1 CPU and 1024 MiB", svc)
		}
	})

	t.Run("interactive", func(t *testing.T) {
		var created struct{ CreateQueue struct{ ID string } }
		gql(t, s.URL, token, `mutation { createQueue(input: {name: "inter", mode: INTERACTIVE}) { id } }`, nil, &created)
		id := detached("submit", "--queue", "inter", "--interactive", "--", "true")
		var out struct{ Node struct{ Interactive bool } }
		gql(t, s.URL, token, `query($id: ID!) { node(id: $id) { ... on Job { interactive } } }`, map[string]any{"id": id}, &out)
		if !out.Node.Interactive {
			t.Fatalf("job %s is not interactive", id)
		}
		_, errOut := expect(1, "submit", "--queue", "inter", "--", "true")
		if !strings.Contains(errOut, "takes interactive jobs only") {
			t.Fatalf("stderr %q, want the queue's refusal", errOut)
		}
	})

	t.Run("gpus", func(t *testing.T) {
		// The default queue offers no GPUs: N alone has no type to take.
		_, errOut := expect(1, "run", "--gpus", "1", "--", "true")
		if !strings.Contains(errOut, "offers no GPUs") {
			t.Fatalf("stderr %q", errOut)
		}
		var q struct {
			Queues struct {
				Edges []struct{ Node struct{ ID string } }
			}
		}
		gql(t, s.URL, token, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, nil, &q)
		setGPUs := func(types ...string) {
			var prices []map[string]any
			for _, ty := range types {
				prices = append(prices, map[string]any{"type": ty, "perMinute": 0})
			}
			gql(t, s.URL, token, `mutation($id: ID!, $p: [GPURateInput!]) { updateQueue(id: $id, input: {gpuPrices: $p}) { id } }`,
				map[string]any{"id": q.Queues.Edges[0].Node.ID, "p": prices}, new(map[string]any))
		}
		setGPUs("H100", "A100")
		_, errOut = expect(1, "run", "--gpus", "2", "--", "true")
		if !strings.Contains(errOut, "several GPU types (H100, A100)") || !strings.Contains(errOut, "--gpus 2:H100") {
			t.Fatalf("stderr %q, want the types and how to choose", errOut)
		}
		// The node has no GPUs, so these jobs wait; detached, that is fine.
		id := detached("submit", "--gpus", "2:A100,H100", "--", "true")
		if svc := jobOf(id).Services[0]; svc.Gpus != 2 || strings.Join(svc.GpuTypes, ",") != "A100,H100" {
			t.Fatalf("service %+v, want 2 GPUs of A100 then H100", svc)
		}
		expect(0, "cancel", id)
		setGPUs("H100")
		id = detached("submit", "--gpus", "1", "--", "true")
		if svc := jobOf(id).Services[0]; svc.Gpus != 1 || strings.Join(svc.GpuTypes, ",") != "H100" {
			t.Fatalf("service %+v, want 1 GPU of the queue's only type", svc)
		}
		expect(0, "cancel", id)
		_, errOut = expect(1, "run", "--gpus", "1:L4", "--", "true")
		if !strings.Contains(errOut, "BAD_USER_INPUT") {
			t.Fatalf("a type the queue does not offer: %q", errOut)
		}
	})

	t.Run("refused by the server", func(t *testing.T) {
		for _, args := range [][]string{
			{"run", "--env", "LEVERS9_JOB_ID=x", "--", "true"},
			{"run", "--env", "1BAD=x", "--", "true"},
			{"run", "--image", "Not An Image", "--", "true"},
			{"submit", "--cpu", "100000", "--", "true"},
		} {
			_, errOut := expect(1, args...)
			if !strings.Contains(errOut, "BAD_USER_INPUT") {
				t.Fatalf("levers9 %v: stderr %q", args, errOut)
			}
		}
	})
	t.Run("bad usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"run"}, {"submit"}, {"run", "-d"},
			{"run", "--gpus", "0", "--", "true"}, {"run", "--gpus", "x:H100", "--", "true"}, {"run", "--gpus", "1:", "--", "true"},
			{"run", "--env", "NOVALUE", "--", "true"}, {"run", "--env", "=v", "--", "true"},
			{"run", "--timeout", "soon", "--", "true"}, {"run", "--timeout", "0", "--", "true"}, {"submit", "--timeout", "10ms", "--", "true"},
		} {
			expect(2, args...)
		}
	})

	t.Run("nodes show the runtime and what is booked", func(t *testing.T) {
		id := detached("submit", "--cpu", "0.5", "--memory", "96", "--", "sleep", "60")
		poll(t, "the job to run", func() bool { return jobOf(id).Status == "RUNNING" })
		out, _ := expect(0, "nodes")
		if !strings.Contains(out, "RUNTIME") || !strings.Contains(out, "docker") || !strings.Contains(out, "CPUS FREE") {
			t.Fatalf("nodes:\n%s", out)
		}
		var nodes []struct {
			Name      string
			Inventory struct {
				CPUs    float64
				Runtime string
			}
			Booked, Free struct {
				CPU       float64
				MemoryMiB int
			}
		}
		out, _ = expect(0, "nodes", "--json")
		if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes) != 1 {
			t.Fatalf("nodes --json: %v\n%s", err, out)
		}
		n := nodes[0]
		if n.Inventory.Runtime != "docker" || n.Booked.CPU != 0.5 || n.Booked.MemoryMiB != 96 || n.Free.CPU != n.Inventory.CPUs-0.5 {
			t.Fatalf("node %+v, want docker with 0.5 CPU and 96 MiB booked", n)
		}
		expect(0, "cancel", id)
	})
}

package docker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// BenchmarkDockerJob shows where a container job's time goes. The same run
// measures a `true` job through the runtime (start → RUNNING, and start →
// ended with its container removed) and, as the baseline, the Docker
// Engine API calls such a job needs made directly, one phase at a time:
// create, start, wait for the exit, remove the container. A job of one
// service joins the node's shared network, made once (ensureSoloNetwork),
// before either.
func BenchmarkDockerJob(b *testing.B) {
	image := dockertest.Busybox(b)
	ctx := context.Background()
	cfg := Config{NodeID: randomID("bench-"), DefaultImage: image, StopGrace: time.Second, PidsLimit: 4096}
	r, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	const rounds = 30
	svc := runtime.ServiceSpec{Name: "main", Image: image, Command: []string{"true"}, CPU: 0.1, MemoryMiB: 16}

	if err := r.ensureSoloNetwork(ctx); err != nil {
		b.Fatal(err)
	}
	phases := []string{"container-create", "container-start", "container-wait", "container-remove"}
	raw := map[string][]time.Duration{}
	var rawTotal []time.Duration
	for range rounds {
		spec := runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Services: []runtime.ServiceSpec{svc}}
		began := time.Now()
		lap := func(phase string, t0 time.Time) { raw[phase] = append(raw[phase], time.Since(t0)) }
		t0 := time.Now()
		created, err := r.cli.ContainerCreate(ctx, createOptions(cfg, spec, 0, nil, serviceEnv(spec.ID, svc, nil)))
		if err != nil {
			b.Fatal(err)
		}
		lap("container-create", t0)
		t0 = time.Now()
		if _, err := r.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			b.Fatal(err)
		}
		lap("container-start", t0)
		t0 = time.Now()
		wait := r.cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-wait.Result:
		case err := <-wait.Error:
			b.Fatal(err)
		}
		lap("container-wait", t0)
		t0 = time.Now()
		if _, err := r.cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			b.Fatal(err)
		}
		lap("container-remove", t0)
		rawTotal = append(rawTotal, time.Since(began))
	}

	var toRunning, toEnd []time.Duration
	for range rounds {
		began := time.Now()
		j, err := r.Start(ctx, runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Services: []runtime.ServiceSpec{svc}})
		if err != nil {
			b.Fatal(err)
		}
		for ev := range j.Events() {
			if s, ok := ev.(runtime.StateEvent); ok && s.State == runtime.Running {
				toRunning = append(toRunning, time.Since(began))
			}
		}
		if res := j.Wait(); res.Status != runtime.Complete {
			b.Fatalf("job ended %s: %s", res.Status, res.Reason)
		}
		toEnd = append(toEnd, time.Since(began))
	}

	b.ReportMetric(0, "ns/op")
	for _, p := range phases {
		b.ReportMetric(p50ms(raw[p]), "p50-raw-"+p+"-ms")
	}
	b.ReportMetric(p50ms(rawTotal), "p50-raw-total-ms")
	b.ReportMetric(p50ms(toRunning), "p50-runtime-running-ms")
	b.ReportMetric(p50ms(toEnd), "p50-runtime-ended-ms")
}

func p50ms(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[(len(s)-1)/2].Microseconds()) / 1000
}

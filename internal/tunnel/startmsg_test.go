package tunnel

import (
	"reflect"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// The Start carries what the agent needs beyond the spec: the attempt
// (log sequence numbers restart per attempt), the tenant (labels) and
// each service's booked GPU devices, services in the order submitted.
func TestStartMessage(t *testing.T) {
	t.Parallel()
	j := &ent.Job{
		ID: "job_1", TenantID: "ten_1", Attempt: 3, TimeoutSeconds: 60,
		Spec: jobspec.Job{Services: []jobspec.Service{{Name: "web"}, {Name: "train"}}},
	}
	j.Edges.Services = []*ent.Service{
		{Name: "train", Image: "python:3.12", CPU: 2, MemoryMib: 1024, Gpus: 2, GpuType: "H100", GpuDevices: []string{"GPU-b", "GPU-c"}},
		{Name: "web", Command: []string{"sh", "-c", "true"}, CPU: 1, MemoryMib: 64, Ports: []jobspec.Port{{Name: "http", Port: 8080}}},
	}
	want := wire.Start{
		JobID: "job_1", Attempt: 3, Tenant: "ten_1", TimeoutSeconds: 60,
		Services: []wire.ServiceStart{
			{Name: "web", Command: []string{"sh", "-c", "true"}, CPU: 1, MemoryMiB: 64, Ports: []wire.Port{{Name: "http", Port: 8080}}},
			{Name: "train", Image: "python:3.12", CPU: 2, MemoryMiB: 1024, GPUs: []string{"GPU-b", "GPU-c"}},
		},
	}
	if got := startMessage(j); !reflect.DeepEqual(got, want) {
		t.Fatalf("start message\n got  %+v\n want %+v", got, want)
	}
}

// A blueprint build's Start carries its Build: without it the agent would
// start the build's service as a container of the image being built.
func TestStartMessageBuild(t *testing.T) {
	t.Parallel()
	b := &wire.Build{Blueprint: "bp_1", Repository: "levers9-bp/ten_1", Steps: []wire.BuildStep{{Key: "k", Kind: wire.StepRegistry, Ref: "busybox"}}}
	j := &ent.Job{ID: "job_1", TenantID: "ten_1", Spec: jobspec.Job{Build: b, Services: []jobspec.Service{{Name: "build"}}}}
	j.Edges.Services = []*ent.Service{{Name: "build", Image: "levers9-bp/ten_1:k", CPU: 2, MemoryMib: 4096}}
	if got := startMessage(j); got.Build != b {
		t.Fatalf("start message of a build: Build %+v, want %+v", got.Build, b)
	}
}

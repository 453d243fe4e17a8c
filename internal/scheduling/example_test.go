package scheduling_test

import (
	"fmt"
	"time"

	"github.com/levers9/levers9/internal/scheduling"
)

func ExampleSchedule() {
	nodes := []scheduling.Node{
		{ID: "node_1", Name: "gpu-01", Capacity: scheduling.Resources{CPU: 32, MemoryMiB: 262144, GPUs: map[string]int{"H100": 4}}},
		{ID: "node_2", Name: "gpu-02", Capacity: scheduling.Resources{CPU: 32, MemoryMiB: 262144, GPUs: map[string]int{"A100": 2}}},
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := []scheduling.Job{
		{ID: "job_train", Submitted: now, Services: []scheduling.Service{
			{Name: "trainer", CPU: 16, MemoryMiB: 65536, GPUs: 4, GPUTypes: []string{"H100"}},
			{Name: "tensorboard", CPU: 1, MemoryMiB: 1024},
		}},
		{ID: "job_eval", Submitted: now.Add(time.Minute), Services: []scheduling.Service{
			{Name: "eval", CPU: 4, MemoryMiB: 16384, GPUs: 2, GPUTypes: []string{"H100", "A100"}},
		}},
		{ID: "job_big", Priority: -1, Submitted: now, Services: []scheduling.Service{
			{Name: "sweep", CPU: 8, MemoryMiB: 8192, GPUs: 2, GPUTypes: []string{"H100"}},
		}},
	}
	placed, waiting, err := scheduling.Schedule(jobs, nodes)
	if err != nil {
		panic(err)
	}
	for _, p := range placed {
		fmt.Println(p.JobID, "on", p.NodeID, p.GPUType, p.Devices)
	}
	fmt.Println(waiting["job_big"].String("gpu"))
	// Output:
	// job_train on node_1 map[trainer:H100] map[trainer:[0 1 2 3]]
	// job_eval on node_2 map[eval:A100] map[eval:[0 1]]
	// waiting for 2 free H100 in queue gpu: 0 of 2 nodes have them
}

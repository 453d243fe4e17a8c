package wire

import (
	"strings"
	"time"
)

var t0 = time.Date(2025, 11, 29, 17, 9, 0, 123456789, time.UTC)

func intp(i int) *int { return &i }

// samples holds one full valid message of every kind.
func samples() []Msg {
	return []Msg{
		Hello{
			NodeID: "node_01jdxyz", AgentVersion: "v0.1.0 (devel)",
			Inventory: Inventory{CPUs: 15.5, MemoryMiB: 64 << 10, GPUs: []GPU{{Type: "H100", Count: 8}, {Type: "A10G", Count: 1}}},
			Running:   []RunningService{{JobID: "job_01", Service: "train", PID: 4242, StartedAt: t0}},
		},
		Hello{NodeID: "node_1", AgentVersion: "1"},
		Welcome{HeartbeatIntervalMs: 5000, FenceAfterMs: 67500},
		Heartbeat{Time: t0},
		Start{
			JobID: "job_01", TimeoutSeconds: 3600, TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			Services: []ServiceStart{
				{
					Name: "api", Command: []string{"python", "-m", "http.server"}, Args: []string{"--bind", "127.0.0.1"},
					Env:   []EnvVar{{Name: "MODE", Value: "a=b <&> ünïcode"}, {Name: "EMPTY", Value: ""}},
					Ports: []Port{{Name: "http", Port: 0}, {Name: "admin_port", Port: 9000}},
					CPU:   0.5, MemoryMiB: 512, GPUs: []string{"0", "GPU-6f1c2e3a-1b2c", "MIG-GPU-abc/1/0"},
				},
				{Name: "my-db", Image: "postgres:17"},
			},
			Mounts: []Mount{
				{Bucket: "bkt_01in", Path: "/data/in", ReadOnly: true},
				{Bucket: "bkt_01out", Path: "/data/out", Link: "/srv/levers9/buckets/bkt-01out"},
			},
		},
		Stop{JobID: "job_01", Reason: "cancelled by ada@levers9.local", GraceSeconds: 10},
		Stop{JobID: "job_01"},
		StateChange{JobID: "job_01", Service: "api", State: StateStarting, Time: t0},
		StateChange{JobID: "job_01", Service: "api", State: StateRunning, Ports: []Port{{Name: "http", Port: 41234}}, Time: t0},
		StateChange{JobID: "job_01", Service: "api", State: StateExited, ExitCode: intp(0), Time: t0},
		StateChange{JobID: "job_01", Service: "api", State: StateFailed, ExitCode: intp(137), Reason: "stopped: timeout", Time: t0},
		StateChange{JobID: "job_01", Service: "api", State: StateFailed, Reason: `exec: "nope": executable file not found in $PATH`, Time: t0},
		Logs{JobID: "job_01", Lines: []LogLine{
			{Service: "api", Stream: Stdout, Seq: 7, Time: t0, Text: "hello <world> & \"quotes\" \x01"},
			{Service: "my-db", Stream: Stderr, Seq: 8, Time: t0.Add(time.Millisecond), Text: ""},
			{Service: "api", Stream: Stdout, Seq: 9, Time: t0, Text: strings.Repeat("x", MaxLogLineBytes)},
		}},
		Reconcile{},
		Reconcile{Running: []RunningService{{JobID: "job_01", Service: "api", StartedAt: t0}}},
		Ack{Seq: 1},
		Ack{Seq: 1<<64 - 1, Error: "unknown job job_02"},
		FileOp{ID: 1, Op: FileList, Root: "/srv/scratch", Bucket: "bkt-01", Prefix: "runs/", After: "runs/a", Limit: 100},
		FileOp{ID: 2, Op: FilePut, Root: "/srv/scratch", Bucket: "bkt-01", Key: "runs/ü.bin", Size: -1},
		FileData{ID: 2, Data: []byte{0, 1, 2, 255}},
		FileData{ID: 2, Last: true},
		FileData{ID: 3, Credit: FileWindow},
		FileData{ID: 3, Abort: true},
		FileResult{ID: 1, Objects: []FileObject{{Key: "runs/a/b", Size: 7, Modified: t0}}},
		FileResult{ID: 2, Code: FileNotFound, Error: "no such object"},
		FileResult{ID: 4, Size: 1 << 40},
	}
}

package wire

import (
	"encoding/json"
	"testing"
	"time"
)

// The join exchange and the files API travel over plain HTTP between an
// agent and a server that may be of different versions: these tests pin
// their JSON, so renaming a field breaks a test rather than old agents.
func TestHTTPContractJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{
			"join request",
			JoinRequest{
				Invite: "inv_secret", Name: "gpu-1", Hostname: "gpu-1", AgentVersion: "v1.2.3",
				Inventory: Inventory{CPUs: 8, MemoryMiB: 32768, GPUs: []GPU{{Type: "H100", Count: 1, Devices: []string{"0"}}}, Runtime: RuntimeDocker},
			},
			`{"invite":"inv_secret","name":"gpu-1","hostname":"gpu-1","agentVersion":"v1.2.3",` +
				`"inventory":{"cpus":8,"memoryMiB":32768,"gpus":[{"type":"H100","count":1,"devices":["0"]}],"runtime":"docker"}}`,
		},
		{
			"join request, only the invite",
			JoinRequest{Invite: "inv_secret"},
			`{"invite":"inv_secret","inventory":{"cpus":0,"memoryMiB":0}}`,
		},
		{
			"join response",
			JoinResponse{NodeID: "node_1", Name: "gpu-1", Credential: "cred"},
			`{"nodeId":"node_1","name":"gpu-1","credential":"cred"}`,
		},
		{
			"file listing",
			FileListing{Objects: []FileObject{{Key: "a/b.txt", Size: 3, Modified: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}}, Next: "a/b.txt"},
			`{"objects":[{"key":"a/b.txt","size":3,"modified":"2025-01-02T03:04:05Z"}],"next":"a/b.txt"}`,
		},
		{
			"file listing, last page",
			FileListing{Objects: []FileObject{}},
			`{"objects":[]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("JSON =\n%s\nwant\n%s", b, tc.want)
			}
		})
	}
	if JobHeader != "Levers9-Job" {
		t.Errorf("JobHeader = %q: agents of other versions send Levers9-Job", JobHeader)
	}
}

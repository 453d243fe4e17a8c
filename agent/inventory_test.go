package agent

import (
	"reflect"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

func TestParseGPUs(t *testing.T) {
	got, err := ParseGPUs("H100:3, A100:2,L4")
	want := []wire.GPU{
		{Type: "H100", Count: 3, Devices: []string{"0", "1", "2"}},
		{Type: "A100", Count: 2, Devices: []string{"3", "4"}},
		{Type: "L4", Count: 1, Devices: []string{"5"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseGPUs = %v, %v", got, err)
	}
	for _, bad := range []string{"H100:0", "H100:x", ":2", "H100:1,H100:2"} {
		if _, err := ParseGPUs(bad); err == nil {
			t.Errorf("ParseGPUs(%q) accepted", bad)
		}
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"256GiB": 256 << 10, "512MiB": 512, "1TiB": 1 << 20, "1024": 1024, "1.5GiB": 1536, "1GB": 953} {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1GiB", "GiB"} {
		if _, err := ParseMemory(bad); err == nil {
			t.Errorf("ParseMemory(%q) accepted", bad)
		}
	}
}

func TestCountGPUs(t *testing.T) {
	got := countGPUs([]string{
		"0, GPU-a1, NVIDIA H100 80GB HBM3", "1, GPU-b2, NVIDIA H100 80GB HBM3", "2, GPU-c3, NVIDIA A100-SXM4-80GB",
		"3, [N/A], NVIDIA GeForce RTX 4090", "", "garbage",
	})
	want := []wire.GPU{
		{Type: "4090", Count: 1, Devices: []string{"3"}},
		{Type: "A100", Count: 1, Devices: []string{"GPU-c3"}},
		{Type: "H100", Count: 2, Devices: []string{"GPU-a1", "GPU-b2"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("countGPUs = %v", got)
	}
}

func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadState(dir); err != ErrNotJoined {
		t.Fatalf("LoadState of an empty dir = %v", err)
	}
	st := &State{Server: "http://x", NodeID: "node_1", Credential: "lv9_x", Declared: Declared{CPUs: 4}}
	if err := SaveState(dir, st); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(dir)
	if err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("LoadState = %+v, %v", got, err)
	}
	inv := got.Declared.Apply(wire.Inventory{CPUs: 64, MemoryMiB: 1000})
	if inv.CPUs != 4 || inv.MemoryMiB != 1000 {
		t.Errorf("declared inventory = %+v", inv)
	}
}

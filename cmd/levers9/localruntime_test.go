package main

import (
	"context"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/agent/runtime"
)

// On the process runtime the built-in node runs each job as a uid of its
// own, from --local-node-job-uids, checked before the server starts.
func TestLocalNodeJobUIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the built-in node's process runtime needs root")
	}
	prepare := func(uids string) (*localRuntime, error) {
		dir := t.TempDir()
		cfg := localNodeConfig{runtimeConfig: runtimeConfig{Runtime: "process", WorkDir: filepath.Join(dir, "work"), JobUIDs: uids}}
		data := filepath.Join(dir, "data")
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		return prepareLocalNode(context.Background(), cfg, data, slog.New(slog.DiscardHandler))
	}
	rt, err := prepare("")
	if err != nil {
		t.Fatal(err)
	}
	if rt.uids != (runtime.UIDRange{First: 1_900_000_000, Count: 65536}) {
		t.Errorf("default uids %v", rt.uids)
	}
	if rt, err = prepare("2000000000:10"); err != nil || rt.uids != (runtime.UIDRange{First: 2_000_000_000, Count: 10}) {
		t.Errorf("uids %v, %v", rt.uids, err)
	}
	bad := []string{"1900000000", "0:10", "4294967295:1"}
	if _, err := user.LookupId("1"); err == nil {
		bad = append(bad, "1:1") // an account's uid
	}
	for _, bad := range bad {
		if _, err := prepare(bad); err == nil || !strings.Contains(err.Error(), "--local-node-job-uids") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

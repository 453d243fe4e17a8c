package e2e

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// A node storage keeps its buckets on a node's disk: levers9 cp/ls/rm reach
// its files through the node's tunnel (streamed in chunks, several MiB
// here), keys cannot leave the bucket, and a job on the node mounts the
// bucket by link.
func TestNodeStorageThroughTunnel(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	grant(t, s.URL, c.Token)
	var local *nodeRow
	poll(t, "the local node", func() bool { local = nodeByName(t, s.URL, c.Token, "local"); return local != nil })
	var ids struct {
		Groups struct {
			Edges []struct{ Node struct{ ID string } }
		}
		Queues struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(t, s.URL, c.Token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } queues(where: {name: "default"}) { edges { node { id } } } }`, nil, &ids)
	root := t.TempDir()
	var st struct{ CreateStorage struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation($n: ID!, $p: String!, $q: ID!) { createStorage(input: {name: "scratch", kind: NODE, nodeID: $n, path: $p, queueIDs: [$q]}) { id } }`,
		map[string]any{"n": local.ID, "p": root, "q": ids.Queues.Edges[0].Node.ID}, &st)
	gql(t, s.URL, c.Token, `mutation($s: ID!, $g: ID!) { createBucket(input: {name: "scratch-data", storageID: $s, writeGroupIDs: [$g]}) { id } }`,
		map[string]any{"s": st.CreateStorage.ID, "g": ids.Groups.Edges[0].Node.ID}, &map[string]any{})

	run := func(want int, args ...string) string {
		t.Helper()
		return expectCLI(t, s, c.Token, want, args...)
	}
	dir := t.TempDir()
	data := make([]byte, 5<<20+123) // several chunks and a partial one
	_, _ = rand.Read(data)
	src := filepath.Join(dir, "weights.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(0, "cp", src, "scratch-data:models/weights.bin")
	if out := run(0, "ls", "scratch-data"); !strings.Contains(out, "models/weights.bin") {
		t.Fatalf("ls:\n%s", out)
	}
	back := filepath.Join(dir, "back.bin")
	run(0, "cp", "scratch-data:models/weights.bin", back)
	if got, _ := os.ReadFile(back); !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes, differing from the %d uploaded", len(got), len(data))
	}
	if out := run(1, "cp", src, "scratch-data:../escape"); !strings.Contains(out, "BAD_USER_INPUT") {
		t.Fatalf("upload outside the bucket: %s", out)
	}
	if out := run(1, "cp", "scratch-data:nope.bin", filepath.Join(dir, "nope")); !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("download of a missing file: %s", out)
	}

	// A job on the node reads and writes the bucket in place.
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation { submitJob(spec: {queue: "default",
		services: [{name: "main", command: ["sh", "-c", "wc -c < data/models/weights.bin > data/size.txt"], cpu: 0.1}],
		mounts: [{bucket: "scratch-data", path: "/data"}]}) { id } }`, nil, &sub)
	var row jobRow
	poll(t, "the job to end", func() bool {
		row = jobByID(t, s.URL, c.Token, sub.SubmitJob.ID)
		return row.Status == "COMPLETE" || row.Status == "ERROR"
	})
	if row.Status != "COMPLETE" {
		t.Fatalf("job ended %s: %s", row.Status, row.StatusReason)
	}
	run(0, "cp", "scratch-data:size.txt", filepath.Join(dir, "size.txt"))
	if got, _ := os.ReadFile(filepath.Join(dir, "size.txt")); strings.TrimSpace(string(got)) != "5243003" {
		t.Fatalf("the job saw %q bytes", got)
	}
	run(0, "rm", "-r", "scratch-data:models")
	if out := run(0, "ls", "scratch-data"); strings.Contains(out, "weights.bin") {
		t.Fatalf("ls after rm:\n%s", out)
	}
	s.stop()
}

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

// createLocalBucket makes a bucket named name on the server's local
// storage that everyone in the tenant may write.
func createLocalBucket(t *testing.T, base, token, name string) {
	t.Helper()
	storage := firstID(t, base, token, `{ storages(where: {name: "local"}) { edges { node { id } } } }`, "storages")
	everyone := firstID(t, base, token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, "groups")
	var created map[string]any
	gql(t, base, token, `mutation($n: String!, $s: ID!, $g: ID!) { createBucket(input: {name: $n, storageID: $s, writeGroupIDs: [$g]}) { id } }`,
		map[string]any{"n": name, "s": storage, "g": everyone}, &created)
}

// levers9 cp/ls/rm move files between the disk and a bucket, byte for
// byte; keys that would leave the bucket are refused.
func TestFilesCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	createLocalBucket(t, s.URL, c.Token, "results")

	dir := t.TempDir()
	data := make([]byte, 3<<20+5)
	_, _ = rand.Read(data)
	if err := os.MkdirAll(filepath.Join(dir, "up", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"up/model.bin": data, "up/sub/notes.txt": []byte("notes")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(want int, args ...string) string {
		t.Helper()
		return expectCLI(t, s, c.Token, want, args...)
	}
	run(0, "cp", "-r", filepath.Join(dir, "up"), "results:run-1")
	if out := run(0, "ls", "results:run-1/"); !strings.Contains(out, "run-1/model.bin") || !strings.Contains(out, "run-1/sub/notes.txt") {
		t.Fatalf("ls after upload:\n%s", out)
	}
	run(0, "cp", "results:run-1/model.bin", filepath.Join(dir, "back.bin"))
	if got, _ := os.ReadFile(filepath.Join(dir, "back.bin")); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs from the uploaded one")
	}
	run(0, "cp", "-r", "results:run-1", filepath.Join(dir, "down"))
	if got, _ := os.ReadFile(filepath.Join(dir, "down", "sub", "notes.txt")); string(got) != "notes" {
		t.Fatalf("recursive download: %q", got)
	}
	if out := run(1, "cp", filepath.Join(dir, "back.bin"), "results:../escape"); !strings.Contains(out, "BAD_USER_INPUT") {
		t.Fatalf("upload outside the bucket: %s", out)
	}
	run(0, "rm", "-r", "results:run-1")
	if out := run(0, "ls", "results"); strings.TrimSpace(out) != "" {
		t.Fatalf("ls after rm -r:\n%s", out)
	}
	run(2, "cp", "a", "b")
	s.stop()
}

// levers9 cancel stops a running job on the local node.
func TestCancelCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation { submitJob(spec: {queue: "default", services: [{name: "main", command: ["sleep", "600"], cpu: 0.1}]}) { id } }`, nil, &sub)
	id := sub.SubmitJob.ID
	poll(t, "the job running", func() bool { return jobByID(t, s.URL, c.Token, id).Status == "RUNNING" })
	out, code := levers9(t, "cancel", "--server", s.URL, "--token", c.Token, id)
	if code != 0 || !strings.Contains(out, "CANCELLED") {
		t.Fatalf("levers9 cancel: exit %d\n%s", code, out)
	}
	if out, code := levers9(t, "cancel", "--server", s.URL, "--token", c.Token, id); code != 1 || !strings.Contains(out, "already ended") {
		t.Fatalf("cancelling twice: exit %d\n%s", code, out)
	}
	s.stop()
}

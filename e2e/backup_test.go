package e2e

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// levers9 admin backup, run while the embedded server serves (and takes
// submissions), archives what a restore needs: a server started on the
// restored data directory finds every job, charge, bucket, object and
// secret of before the backup (jobs run on the built-in node), and the
// first start's token still works.
func TestBackupWhileServingRestoresIntoANewServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The built-in node runs the jobs: its state is in the data directory.
	s := startServer(t, dir, dbtest.SQLiteURL(t))
	c := s.credentials()
	cli := func(srv *server, want int, args ...string) string {
		t.Helper()
		return expectCLI(t, srv, c.Token, want, args...)
	}

	submit := func() string {
		var sub struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "kept", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1}]}) { id } }`, nil, &sub)
		return sub.SubmitJob.ID
	}
	jobs := []string{submit(), submit()}
	for _, id := range jobs {
		poll(t, "job "+id+" to complete", func() bool { return jobByID(t, s.URL, c.Token, id).Status == "COMPLETE" })
	}
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gql(t, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
	var granted map[string]any
	gql(t, s.URL, c.Token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 12.5, reason: "before the backup"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, &granted)
	createLocalBucket(t, s.URL, c.Token, "results")
	object := make([]byte, 1<<20+7)
	_, _ = rand.Read(object)
	local := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(local, object, 0o600); err != nil {
		t.Fatal(err)
	}
	cli(s, 0, "cp", local, "results:run-1/model.bin")
	cli(s, 0, "secret", "create", "hf", "HF_TOKEN=kept-in-the-backup")

	// Submissions go on while the backup runs.
	var more sync.WaitGroup
	var stop atomic.Bool
	more.Add(1)
	go func() {
		defer more.Done()
		// Not without end: each job adds a charge to the ledger read below.
		for n := 0; n < 200 && !stop.Load(); n++ {
			submit()
		}
	}()
	dataDir := filepath.Join(dir, "levers9-data")
	archive := filepath.Join(t.TempDir(), "levers9.tar.gz")
	out, code := levers9(t, "admin", "backup", "--data-dir", dataDir, archive)
	stop.Store(true)
	more.Wait()
	if code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("levers9 admin backup: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the archive (it holds the secret key): %v, mode %v; want 0600", err, fi.Mode())
	}
	if out, code := levers9(t, "admin", "backup", "--data-dir", dataDir, archive); code != 1 || !strings.Contains(out, "exists") {
		t.Errorf("a backup over an existing file: exit %d\n%s", code, out)
	}
	if out, code := levers9(t, "admin", "restore", archive, "--data-dir", dataDir); code != 1 || !strings.Contains(out, "not empty") {
		t.Errorf("a restore into the live data directory: exit %d\n%s", code, out)
	}

	dir2 := t.TempDir()
	if out, code := levers9(t, "admin", "restore", archive, "--data-dir", filepath.Join(dir2, "levers9-data")); code != 0 {
		t.Fatalf("levers9 admin restore: exit %d\n%s", code, out)
	}
	key1, _ := os.ReadFile(filepath.Join(dataDir, "secret.key"))
	key2, _ := os.ReadFile(filepath.Join(dir2, "levers9-data", "secret.key"))
	if len(key1) == 0 || !bytes.Equal(key1, key2) {
		t.Error("the restored secret key differs from the server's")
	}
	// The built-in node's credential, not its caches.
	if _, err := os.Stat(filepath.Join(dir2, "levers9-data", "node", "node.json")); err != nil {
		t.Errorf("the built-in node's credential was not restored: %v", err)
	}
	r := startServer(t, dir2, dbtest.SQLiteURL(t), "LEVERS9_LOCAL_NODE=false")
	for _, id := range jobs {
		if out := cli(r, 0, "job", "show", id); !strings.Contains(out, id) {
			t.Errorf("job %s after the restore:\n%s", id, out)
		}
	}
	if out := cli(r, 0, "tokens", "-n", "1000"); !strings.Contains(out, "before the backup") {
		t.Errorf("the grant's charge after the restore:\n%s", out)
	}
	if out := cli(r, 0, "ls", "results:run-1/"); !strings.Contains(out, "run-1/model.bin") {
		t.Errorf("the bucket after the restore:\n%s", out)
	}
	back := filepath.Join(t.TempDir(), "back.bin")
	cli(r, 0, "cp", "results:run-1/model.bin", back)
	if got, _ := os.ReadFile(back); !bytes.Equal(got, object) {
		t.Error("the object read back after the restore differs")
	}
	if out := cli(r, 0, "secret", "list"); !strings.Contains(out, "hf") {
		t.Errorf("the secret after the restore:\n%s", out)
	}
	r.stop()
	s.stop()
	for _, line := range r.allStdout() {
		if strings.Contains(line, "First start") {
			t.Error("the restored server started afresh")
		}
	}
	if strings.Contains(r.stderr.String(), "re-encrypted") {
		t.Errorf("the restored server cannot open its secrets:\n%s", r.stderr)
	}
}

package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// What a job leaves in a synced mount is uploaded only from inside the
// mount: a link to a file outside (another node bucket, the agent's own
// files) is refused, as is a FIFO (which would block the agent); a link
// within the mount is followed. The same holds for copying a node bucket.
func TestUploadStaysInsideMount(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	dir := filepath.Join(base, "mount")
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	for f, content := range map[string]string{secret: "secret", filepath.Join(dir, "out", "ok"): "ok"} {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"abs": secret, "up": "../secret", "outdir": "..", "inner": "out/ok"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	fc := &filesClient{server: srv.URL, credential: "cred", jobID: "job_1"}
	ctx := context.Background()
	for _, key := range []string{"abs", "up", "outdir/secret", "fifo"} {
		if err := fc.upload(ctx, "bkt", key, dir); err == nil {
			t.Errorf("upload of %s succeeded", key)
		}
		if err := copyFile(dir, key, filepath.Join(base, "copy")); err == nil {
			t.Errorf("copy of %s succeeded", key)
		}
	}
	for path, body := range got {
		if body == "secret" {
			t.Errorf("the file outside the mount was uploaded as %s", path)
		}
	}
	if err := fc.upload(ctx, "bkt", "inner", dir); err != nil {
		t.Fatalf("upload of a link inside the mount: %v", err)
	}
	if got["/files/bkt/inner"] != "ok" {
		t.Errorf("uploaded %q for a link inside the mount", got["/files/bkt/inner"])
	}
}

package agent

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// zipEntry is one entry of a test package.
type zipEntry struct {
	name string
	mode fs.FileMode
	body string
}

func makeZip(t *testing.T, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTemp(t *testing.T, b []byte) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.zip")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return f
}

// Only plain files and folders inside the package are unpacked; anything
// else refuses the whole package, as do packages over the limits.
func TestUnpackCode(t *testing.T) {
	t.Parallel()
	good := []zipEntry{{"pkg/", fs.ModeDir | 0o755, ""}, {"pkg/mod.py", 0o644, "x = 1\n"}, {"run.sh", 0o755, "#!/bin/sh\n"}, {"deep/a/b.txt", 0o600, "b"}}
	lim := codeLimits{Bytes: 1 << 20, Entries: 100}
	tests := []struct {
		name    string
		entries []zipEntry
		lim     codeLimits
		wantErr string // "" : unpacks
	}{
		{"plain files and folders", good, lim, ""},
		{"a name leaving the package", []zipEntry{{"../x", 0o644, "x"}}, lim, "not a plain relative name"},
		{"a name leaving deeper down", []zipEntry{{"a/../../x", 0o644, "x"}}, lim, "not a plain relative name"},
		{"an absolute name", []zipEntry{{"/etc/x", 0o644, "x"}}, lim, "not a plain relative name"},
		{"a backslash name", []zipEntry{{`..\x`, 0o644, "x"}}, lim, "not a plain relative name"},
		{"a symbolic link", []zipEntry{{"link", fs.ModeSymlink | 0o777, "/etc/passwd"}}, lim, "symbolic link"},
		{"a named pipe", []zipEntry{{"fifo", fs.ModeNamedPipe | 0o644, ""}}, lim, "not a regular file"},
		{"a device", []zipEntry{{"dev", fs.ModeDevice | 0o644, ""}}, lim, "not a regular file"},
		{"a file named twice", []zipEntry{{"a", 0o644, "1"}, {"a", 0o644, "2"}}, lim, "exists"},
		{"too many entries", good, codeLimits{Bytes: 1 << 20, Entries: 3}, "4 entries, at most 3"},
		{"too many bytes", []zipEntry{{"a", 0o644, strings.Repeat("a", 600)}, {"b", 0o644, strings.Repeat("b", 600)}}, codeLimits{Bytes: 1000, Entries: 10}, "more than 1000 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			err := unpackCode(writeTemp(t, makeZip(t, tc.entries...)), dir, tc.lim)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				name string
				mode fs.FileMode
			}{{"pkg", fs.ModeDir | 0o755}, {"pkg/mod.py", 0o644}, {"run.sh", 0o755}, {"deep/a/b.txt", 0o644}} {
				fi, err := os.Lstat(filepath.Join(dir, f.name))
				if err != nil || fi.Mode() != f.mode {
					t.Errorf("%s: %v, mode %v; want %v", f.name, err, fi.Mode(), f.mode)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "pkg/mod.py")); string(b) != "x = 1\n" {
				t.Errorf("pkg/mod.py = %q", b)
			}
		})
	}
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func testAgent(t *testing.T, server string) *Agent {
	t.Helper()
	dir := t.TempDir()
	return &Agent{cfg: Config{StateDir: dir}, st: &State{Server: server, Credential: "cred"}, log: slog.New(slog.DiscardHandler)}
}

// A package is fetched once per node, however many jobs start with it at
// once or later, with the node credential and the job; one whose content
// does not match its hash is refused.
func TestCodeFetchedOnce(t *testing.T) {
	t.Parallel()
	pkg := makeZip(t, zipEntry{"main.py", 0o644, "print('hi')\n"})
	sum := sha256.Sum256(pkg)
	hash := hex.EncodeToString(sum[:])
	other := strings.Repeat("ab", 32)
	var fetches atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer cred" || r.Header.Get(wire.JobHeader) != "job_1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/agent/code/" + hash:
			fetches.Add(1)
			<-release // both jobs are waiting by now
			_, _ = w.Write(pkg)
		case "/agent/code/" + other:
			_, _ = w.Write(pkg) // not what the hash says
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	a := testAgent(t, srv.URL)
	ctx := context.Background()
	var wg sync.WaitGroup
	dirs := make([]string, 2)
	errs := make([]error, 2)
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = a.codeDir(ctx, "job_1", hash) })
	}
	for fetches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the second job asks meanwhile
	close(release)
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	if dirs[0] != dirs[1] {
		t.Errorf("dirs %s and %s; want one", dirs[0], dirs[1])
	}
	if _, err := a.codeDir(ctx, "job_1", hash); err != nil {
		t.Fatal(err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches; want 1", n)
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], "main.py")); err != nil || string(b) != "print('hi')\n" {
		t.Errorf("main.py = %q, %v", b, err)
	}
	if _, err := a.codeDir(ctx, "job_1", other); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a package not matching its hash: err = %v; want a refusal naming the SHA-256", err)
	}
	if _, err := os.Stat(filepath.Join(a.codeRoot(), other)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused package is in the cache: %v", err)
	}
	if _, err := a.codeDir(ctx, "job_1", "../../etc"); err == nil {
		t.Error("a hash that is no hash was fetched")
	}
	left, _ := os.ReadDir(a.codeRoot())
	if len(left) != 1 {
		t.Errorf("the cache holds %d entries; want only the package (no temporary files)", len(left))
	}
}

// The levers9 package is written once, importable as levers9.
func TestSDKDir(t *testing.T) {
	t.Parallel()
	a := testAgent(t, "http://unused")
	dir, err := a.sdkDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"__init__.py", "client.py"} {
		fi, err := os.Stat(filepath.Join(dir, "levers9", f))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("levers9/%s: %v", f, err)
		}
	}
	again, err := a.sdkDir()
	if err != nil || again != dir {
		t.Errorf("second sdkDir = %s, %v; want %s", again, err, dir)
	}
}

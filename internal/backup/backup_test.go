package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// openWAL opens the SQLite file at p the way the server does (WAL, busy
// timeout), with one connection.
func openWAL(t *testing.T, p string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A backup taken while another connection writes holds one consistent
// state of the database (every transaction whole) and the data
// directory's files, without uploads in progress, the live WAL or links;
// it restores into a new directory.
func TestBackupWhileWritingRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := t.TempDir()
	db := openWAL(t, filepath.Join(data, DatabaseName))
	if _, err := db.Exec("CREATE TABLE jobs(id INTEGER PRIMARY KEY, n INT); CREATE TABLE charges(id INTEGER PRIMARY KEY, job INT)"); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"secret.key":                  "c2VjcmV0IGtleSBmb3IgdGVzdHMgb25seSAxMjM0NTY=\n",
		"buckets/results/run-1/a.bin": strings.Repeat("x", 100_000),
		"blobs/functions/ab/cdef":     "code",
		"node/state.json":             `{"node":"node_1"}`,
	}
	for name, content := range files {
		writeFile(t, filepath.Join(data, name), content)
	}
	writeFile(t, filepath.Join(data, "buckets", ".uploads", "half"), "an upload in progress")
	writeFile(t, filepath.Join(data, "node", "images", "layer.tar"), "a cache")
	writeFile(t, filepath.Join(data, "node", "mounts", "job_1", "data", "x"), "a mounted bucket")
	if err := os.Symlink("/etc/passwd", filepath.Join(data, "buckets", "results", "link")); err != nil {
		t.Fatal(err)
	}

	// A job and its charge, always in one transaction, as fast as it goes.
	var written atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			tx, err := db.Begin()
			if err == nil {
				_, err = tx.Exec("INSERT INTO jobs(n) VALUES (?)", i)
			}
			if err == nil {
				_, err = tx.Exec("INSERT INTO charges(job) VALUES (last_insert_rowid())")
			}
			if err == nil {
				err = tx.Commit()
			}
			if err != nil {
				done <- err
				return
			}
			written.Add(1)
		}
	}()
	for written.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Write(ctx, Options{DataDir: data, Version: "1.2.3", Commit: "abc", Only: map[string][]string{"node": {"state.json"}}}, f)
	_ = f.Close()
	before := written.Load()
	close(stop)
	if werr := <-done; werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !sum.SecretKey || sum.Files != len(files)+1 {
		t.Errorf("summary %+v; want %d files with the secret key", sum, len(files)+1)
	}

	target := filepath.Join(t.TempDir(), "restored")
	in, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	m, rsum, err := Restore(ctx, in, target)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != Format || m.Version != "1.2.3" || m.Commit != "abc" || rsum.Files != sum.Files || rsum.Bytes != sum.Bytes {
		t.Errorf("restored %+v %+v; wrote %+v", m, rsum, sum)
	}
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(target, name))
		if err != nil || string(got) != content {
			t.Errorf("%s restored as %d bytes (%v), want %d", name, len(got), err, len(content))
		}
	}
	if fi, err := os.Stat(filepath.Join(target, "secret.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret.key restored with mode %v (%v), want 0600", fi.Mode(), err)
	}
	for _, gone := range []string{"buckets/.uploads", "buckets/results/link", "node/images", "node/mounts", DatabaseName + "-wal", DatabaseName + "-shm"} {
		if _, err := os.Lstat(filepath.Join(target, gone)); err == nil {
			t.Errorf("%s was restored", gone)
		}
	}
	restored := openWAL(t, filepath.Join(target, DatabaseName))
	var jobs, charges int64
	if err := restored.QueryRow("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM charges)").Scan(&jobs, &charges); err != nil {
		t.Fatal(err)
	}
	if jobs != charges || jobs < 50 || jobs > before+1 {
		t.Errorf("restored %d jobs and %d charges; want equal counts between 50 and %d", jobs, charges, before+1)
	}
}

// Backing up PostgreSQL points to pg_dump without quoting the URL.
func TestSQLitePath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url, want, err string
	}{
		{"", "/data/levers9.db", ""},
		{"sqlite:/srv/l9.db", "/srv/l9.db", ""},
		{"/srv/l9.db", "/srv/l9.db", ""},
		{"postgres://levers9:hunter2@db/levers9", "", "pg_dump"},
		{"postgresql://levers9:hunter2@db/levers9", "", "pg_dump"},
	}
	for _, tc := range cases {
		got, err := SQLitePath(tc.url, "/data")
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.url, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter2")):
			t.Errorf("%q: %v; want an error naming %s and not the password", tc.url, err, tc.err)
		}
	}
}

// entry is one tar entry of a hand-made archive.
type entry struct {
	name     string
	typeflag byte
	body     string
	link     string
}

func makeArchive(t *testing.T, manifest *Manifest, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if manifest != nil {
		b, _ := json.Marshal(manifest)
		entries = append([]entry{{name: ManifestName, body: string(b)}}, entries...)
	}
	for _, e := range entries {
		if e.typeflag == 0 {
			e.typeflag = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			_, _ = tw.Write([]byte(e.body))
		}
	}
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// A database file a restore accepts.
func validDatabase(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.db")
	db := openWAL(t, p)
	if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A restore refuses a non-empty target and any archive that is not a
// whole levers9 backup or whose entries would leave the new data
// directory; it leaves nothing behind, inside the target or beside it.
func TestRestoreRefuses(t *testing.T) {
	t.Parallel()
	good := &Manifest{Format: Format}
	db := entry{name: DatabaseName, body: validDatabase(t)}
	valid := makeArchive(t, good, db)
	cases := []struct {
		name    string
		archive []byte
		prepare func(t *testing.T, target string)
		says    string
	}{
		{"a non-empty target", valid, func(t *testing.T, target string) { writeFile(t, filepath.Join(target, "levers9.db"), "live") }, "not empty"},
		{"a file as target", valid, func(t *testing.T, target string) { writeFile(t, target, "x") }, "not a directory"},
		{"not gzip", []byte("hello"), nil, "not a levers9 backup"},
		{"no manifest", makeArchive(t, nil, db), nil, "not a levers9 backup"},
		{"another format", makeArchive(t, &Manifest{Format: 99, Version: "9.0"}, db), nil, "format 99"},
		{"no database", makeArchive(t, good, entry{name: "secret.key", body: "k"}), nil, "no levers9.db"},
		{"a damaged database", makeArchive(t, good, entry{name: DatabaseName, body: strings.Repeat("not sqlite", 500)}), nil, "levers9.db"},
		{"a parent path", makeArchive(t, good, db, entry{name: "../escaped", body: "x"}), nil, "leaves the data directory"},
		{"a deep parent path", makeArchive(t, good, db, entry{name: "buckets/../../escaped", body: "x"}), nil, "leaves the data directory"},
		{"an absolute path", makeArchive(t, good, db, entry{name: "/tmp/escaped", body: "x"}), nil, "leaves the data directory"},
		{"a symbolic link", makeArchive(t, good, db, entry{name: "buckets", typeflag: tar.TypeSymlink, link: "/"}), nil, "not a file or directory"},
		{"a hard link", makeArchive(t, good, db, entry{name: "k", typeflag: tar.TypeLink, link: "/etc/shadow"}), nil, "not a file or directory"},
		{"an entry twice", makeArchive(t, good, db, db), nil, "appears twice"},
		{"a truncated archive", valid[:len(valid)/2], nil, "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			target := filepath.Join(parent, "data")
			if tc.prepare != nil {
				tc.prepare(t, target)
			}
			_, _, err := Restore(context.Background(), bytes.NewReader(tc.archive), target)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("restore: %v; want an error saying %q", err, tc.says)
			}
			names, _ := os.ReadDir(parent)
			if tc.prepare == nil && len(names) != 0 {
				t.Errorf("left behind in the parent: %v", names)
			}
			if _, err := os.Stat(filepath.Join(parent, "..", "escaped")); err == nil {
				t.Error("an entry escaped the data directory")
			}
		})
	}
	// The valid archive restores, into a missing or an empty directory.
	for _, pre := range []bool{false, true} {
		target := filepath.Join(t.TempDir(), "data")
		if pre {
			if err := os.Mkdir(target, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := Restore(context.Background(), bytes.NewReader(valid), target); err != nil {
			t.Fatalf("a valid archive (target existed: %v): %v", pre, err)
		}
	}
}

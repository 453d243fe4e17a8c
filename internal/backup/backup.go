// Package backup archives the data directory of an embedded levers9
// server (SQLite) while it serves, and restores such an archive into a new
// data directory. PostgreSQL installations back up with pg_dump instead.
//
// An archive is a gzipped tar: a manifest, a snapshot of the database
// taken with SQLite's online backup API (one read transaction, so it is
// consistent however busy the server is), then every other file of the
// data directory: the secret key, local buckets, blobs, the built-in
// node's credential.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
)

const (
	// ManifestName is the archive's first entry.
	ManifestName = "levers9-backup.json"
	// DatabaseName is the database's name in the archive and in a
	// restored data directory (the server's default).
	DatabaseName = "levers9.db"
	// Format is the archive layout this package writes and reads.
	Format = 1
	// uploadsDir holds the local storage's uploads in progress: not data.
	uploadsDir = ".uploads"
)

// Manifest describes an archive.
type Manifest struct {
	Format  int       `json:"format"`
	Created time.Time `json:"created"`
	// Version and Commit are the levers9 build that wrote it.
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// Options say what to back up.
type Options struct {
	// DataDir is the server's data directory.
	DataDir string
	// Database is the SQLite file; "": DataDir/levers9.db.
	Database string
	// Exclude are files not to archive (the archive being written, when
	// it lies in the data directory).
	Exclude []string
	// Only names directories (relative to DataDir, slash-separated) of
	// which only the files listed are archived: the built-in node's
	// state directory holds its credential beside caches (images, code)
	// and the jobs' mount points, which a restore does not need and
	// which may reach into other file systems.
	Only map[string][]string
	// Version and Commit go into the manifest.
	Version, Commit string
	Now             func() time.Time
}

// Summary counts what an archive holds.
type Summary struct {
	Files int   // regular files, the database included
	Bytes int64 // their sizes
	// SecretKey reports whether DataDir/secret.key was archived.
	SecretKey bool
}

// SQLitePath is the SQLite file of a server database URL (as
// --database-url takes it; "" is the default in dataDir), or an error
// naming pg_dump for PostgreSQL.
func SQLitePath(databaseURL, dataDir string) (string, error) {
	switch {
	case databaseURL == "":
		return filepath.Join(dataDir, DatabaseName), nil
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return "", errors.New("the database is PostgreSQL: back it up with pg_dump (pg_dump --format=custom --file=levers9.dump URL; " +
			"restore with pg_restore --clean --if-exists --dbname=URL levers9.dump), and keep the secret key (--secret-key-file or LEVERS9_SECRET_KEY) " +
			"and any local buckets with it")
	}
	return strings.TrimPrefix(databaseURL, "sqlite:"), nil
}

// Write writes an archive of opts.DataDir to w.
func Write(ctx context.Context, opts Options, w io.Writer) (Summary, error) {
	var sum Summary
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return sum, fmt.Errorf("data directory: %w", err)
	}
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		return sum, fmt.Errorf("no data directory at %s", dataDir)
	}
	dbPath := opts.Database
	if dbPath == "" {
		dbPath = filepath.Join(dataDir, DatabaseName)
	}
	if dbPath, err = filepath.Abs(dbPath); err != nil {
		return sum, fmt.Errorf("database: %w", err)
	}
	tmp, err := os.MkdirTemp("", "levers9-backup-")
	if err != nil {
		return sum, fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	snapshot := filepath.Join(tmp, DatabaseName)
	if err := Snapshot(ctx, dbPath, snapshot); err != nil {
		return sum, err
	}

	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	a := &archiver{tw: tw, sum: &sum, at: now().UTC()}
	manifest, err := json.MarshalIndent(Manifest{Format: Format, Created: a.at, Version: opts.Version, Commit: opts.Commit}, "", "  ")
	if err != nil {
		return sum, err
	}
	if err := a.bytes(ManifestName, manifest); err != nil {
		return sum, err
	}
	if err := a.file(DatabaseName, snapshot); err != nil {
		return sum, err
	}
	// The live database's files: the snapshot stands for them.
	skip := map[string]bool{}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		skip[dbPath+suffix] = true
	}
	for _, p := range opts.Exclude {
		if abs, err := filepath.Abs(p); err == nil {
			skip[abs] = true
		}
	}
	// After the snapshot: every blob and object its rows name is already
	// on disk (files are written before the rows naming them), unless
	// deleted since.
	err = filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == dataDir {
			return nil
		}
		rel, err := filepath.Rel(dataDir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if keep, ok := opts.Only[path.Dir(name)]; ok && !slices.Contains(keep, path.Base(name)) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case skip[p]:
			return nil
		case d.IsDir() && d.Name() == uploadsDir:
			return fs.SkipDir
		case d.IsDir():
			return a.dir(name)
		case d.Type().IsRegular():
			if name == "secret.key" {
				sum.SecretKey = true
			}
			return a.file(name, p)
		}
		return nil // sockets, symbolic links: nothing a restore needs
	})
	if err != nil {
		return sum, err
	}
	if err := tw.Close(); err != nil {
		return sum, fmt.Errorf("writing the archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return sum, fmt.Errorf("writing the archive: %w", err)
	}
	return sum, nil
}

type archiver struct {
	tw  *tar.Writer
	sum *Summary
	at  time.Time
}

func (a *archiver) dir(name string) error {
	return a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700, ModTime: a.at, Format: tar.FormatPAX})
}

func (a *archiver) bytes(name string, b []byte) error {
	if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: a.at, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	if _, err := a.tw.Write(b); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	return nil
}

// file archives the file at p as name. Its size is read from the open
// file: the local storage replaces files by renaming, so an open file
// does not change under us; one that does fails the backup rather than
// archiving a torn copy.
func (a *archiver) file(name, p string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // deleted since the walk listed it
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(fi.Mode().Perm() & 0o700), Size: fi.Size(), ModTime: fi.ModTime(), Format: tar.FormatPAX}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	if n, err := io.CopyN(a.tw, f, fi.Size()); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s shrank while being archived (%d of %d bytes)", p, n, fi.Size())
		}
		return fmt.Errorf("archiving %s: %w", p, err)
	}
	a.sum.Files++
	a.sum.Bytes += fi.Size()
	return nil
}

// Snapshot copies the SQLite database at src to the new file dst with
// SQLite's online backup API, while other processes (the server) use it.
func Snapshot(ctx context.Context, src, dst string) error {
	if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("no SQLite database at %s (is this the server's data directory?)", src)
	}
	// mode=rw: never create an empty database where none was.
	db, err := sql.Open("sqlite", "file:"+src+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		src, ok := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver (%T) has no backup API", dc)
		}
		b, err := src.NewBackup(dst)
		if err != nil {
			return err
		}
		// All pages in one step: one read transaction, so one consistent
		// state. Under WAL the server's writes go on meanwhile.
		_, stepErr := b.Step(-1)
		return errors.Join(stepErr, b.Finish())
	})
	if err != nil {
		return fmt.Errorf("copying the database %s: %w", src, err)
	}
	return Verify(ctx, dst)
}

// Verify runs SQLite's quick_check on the database file at p, a copy no
// one else has open. It puts the copy in rollback-journal mode first: the
// online backup copies the live database's WAL flag, and a WAL database
// leaves -wal and -shm files beside it once opened (the server turns WAL
// on again when it opens the restored file).
func Verify(ctx context.Context, p string) error {
	db, err := sql.Open("sqlite", "file:"+p+"?mode=rw&_pragma=journal_mode(DELETE)")
	if err != nil {
		return fmt.Errorf("checking %s: %w", p, err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&res); err != nil {
		return fmt.Errorf("checking %s: %w", p, err)
	}
	if res != "ok" {
		return fmt.Errorf("the database copy %s is damaged: %s", p, res)
	}
	return nil
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/internal/backup"
)

const adminUsage = `usage: levers9 admin backup [--data-dir DIR] [--database-url URL] FILE
       levers9 admin restore FILE --data-dir NEW
`

// newAdminCommand is levers9 admin: operations on the server's own data,
// run on the server's machine (no connection to it).
func newAdminCommand(a *app) *cobra.Command {
	return groupCommand(a, "admin", "back up or restore an embedded (SQLite) server's data", adminUsage,
		newBackupCommand(a), newRestoreCommand(a))
}

func newBackupCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup [--data-dir DIR] [--database-url URL] FILE",
		Short: "archive the data directory (SQLite, buckets, blobs, secret key) while the server runs",
		Long: "Write a gzipped tar of the server's data directory to FILE (a new file, mode 0600): a consistent snapshot of\n" +
			"the SQLite database taken with SQLite's online backup API while the server serves, then the secret key, local\n" +
			"buckets, blobs and the built-in node's credential. The archive holds the secret key: keep it as safe as the server.\n" +
			"For PostgreSQL, use pg_dump.",
		Args: cobra.ExactArgs(1),
	}
	dataDir := cmd.Flags().String("data-dir", env("LEVERS9_DATA_DIR", "levers9-data"), "the server's data directory (LEVERS9_DATA_DIR)")
	dbURL := cmd.Flags().String("database-url", env("LEVERS9_DATABASE_URL", ""), "the server's database, if not the data directory's SQLite (LEVERS9_DATABASE_URL)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return codeErr(runBackup(cmd, *dataDir, *dbURL, args[0], a.stdout, a.stderr))
	}
	return cmd
}

func runBackup(cmd *cobra.Command, dataDir, dbURL, file string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "levers9 admin backup:", err)
		return exitError
	}
	dbPath, err := backup.SQLitePath(dbURL, dataDir)
	if err != nil {
		return fail(err)
	}
	if _, err := os.Lstat(file); err == nil {
		return fail(fmt.Errorf("%s exists: give a new file name", file))
	}
	// A new file, private from the start (it holds the secret key and
	// the database), renamed into place only when whole.
	tmp := file + ".partial"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(fmt.Errorf("creating the archive: %w", err))
	}
	defer os.Remove(tmp) // after the rename, a no-op
	sum, err := backup.Write(cmd.Context(), backup.Options{DataDir: dataDir, Database: dbPath, Exclude: []string{tmp},
		// Of the built-in node's state, its credential; the rest is caches.
		Only:    map[string][]string{"node": {agent.StateFile}},
		Version: version, Commit: buildCommit()}, out)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing the archive: %w", cerr)
	}
	if err != nil {
		return fail(err)
	}
	if _, err := os.Lstat(file); err == nil {
		return fail(fmt.Errorf("%s exists: give a new file name", file))
	}
	if err := os.Rename(tmp, file); err != nil {
		return fail(fmt.Errorf("creating the archive: %w", err))
	}
	fmt.Fprintf(stdout, "backed up %d files (%s) of %s to %s\n", sum.Files, humanBytes(sum.Bytes), dataDir, file)
	if !sum.SecretKey || os.Getenv("LEVERS9_SECRET_KEY") != "" || os.Getenv("LEVERS9_SECRET_KEY_FILE") != "" {
		fmt.Fprintln(stderr, "note: the secret keys are not all in the data directory (LEVERS9_SECRET_KEY or --secret-key-file): "+
			"keep them with this backup, secrets cannot be read without them")
	}
	return exitOK
}

func newRestoreCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir NEW",
		Short: "unpack a backup into a new, empty data directory",
		Long: "Unpack a backup made by levers9 admin backup into NEW, which must not exist or be empty; then start the\n" +
			"server with --data-dir NEW (stop the old one first if both would serve the same URL or nodes).",
		Args: cobra.ExactArgs(1),
	}
	dataDir := cmd.Flags().String("data-dir", "", "the new data directory (required)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *dataDir == "" {
			fmt.Fprint(a.stderr, "levers9 admin restore: --data-dir is required\n"+adminUsage)
			return exitCode(exitUsage)
		}
		return codeErr(runRestore(cmd, args[0], *dataDir, a.stdout, a.stderr))
	}
	return cmd
}

func runRestore(cmd *cobra.Command, file, dataDir string, stdout, stderr io.Writer) int {
	in, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 admin restore:", err)
		return exitError
	}
	defer in.Close()
	m, sum, err := backup.Restore(cmd.Context(), in, dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 admin restore:", err)
		return exitError
	}
	abs, _ := filepath.Abs(dataDir)
	fmt.Fprintf(stdout, "restored %d files (%s) from a backup of %s (levers9 %s) into %s\nstart the server with --data-dir %s\n",
		sum.Files, humanBytes(sum.Bytes), m.Created.Format("2006-01-02 15:04:05 MST"), strings.TrimSpace(m.Version), abs, abs)
	if !sum.SecretKey {
		fmt.Fprintln(stderr, "note: the backup holds no secret key: give the server the keys it used (--secret-key-file or LEVERS9_SECRET_KEY)")
	}
	return exitOK
}

// humanBytes is n in B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

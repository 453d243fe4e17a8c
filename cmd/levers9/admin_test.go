package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// levers9 admin refuses what it cannot do, saying why, and leaves no
// archive behind: PostgreSQL (pg_dump instead, the URL's password never
// quoted), a missing data directory, a restore with no target.
func TestAdminRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	archive := filepath.Join(dir, "backup.tar.gz")
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"postgres", []string{"admin", "backup", "--database-url", "postgres://levers9:hunter2@db/levers9", archive}, exitError, "pg_dump"},
		{"no data directory", []string{"admin", "backup", "--data-dir", filepath.Join(dir, "missing"), archive}, exitError, "no data directory"},
		{"no database", []string{"admin", "backup", "--data-dir", dir, archive}, exitError, "no SQLite database"},
		{"no file", []string{"admin", "backup", "--data-dir", dir}, exitUsage, "accepts 1 arg"},
		{"restore without a target", []string{"admin", "restore", archive}, exitUsage, "--data-dir is required"},
		{"restore of a missing file", []string{"admin", "restore", filepath.Join(dir, "none.tar.gz"), "--data-dir", filepath.Join(dir, "new")}, exitError, "no such file"},
		{"an unknown subcommand", []string{"admin", "dump"}, exitUsage, "unknown subcommand"},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", tc.name, code, stderr, tc.code, tc.says)
		}
		if strings.Contains(stdout+stderr, "hunter2") {
			t.Errorf("%s: the output quotes the database password", tc.name)
		}
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
}

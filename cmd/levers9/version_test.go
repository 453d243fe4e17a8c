package main

import (
	"runtime"
	"testing"
)

// levers9 version prints the stamped version and commit and the Go
// version; the dashboard's label carries a short commit.
func TestVersionCommand(t *testing.T) {
	oldVersion, oldCommit := version, commit
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
	version, commit = "1.4.2", "0123456789abcdef0123456789abcdef01234567"

	code, stdout, stderr := runCLI(t, "version")
	want := "levers9 1.4.2\ncommit  0123456789abcdef0123456789abcdef01234567\ngo      " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if code != exitOK || stdout != want || stderr != "" {
		t.Errorf("levers9 version: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	if got := versionLabel(); got != "1.4.2 (0123456789ab)" {
		t.Errorf("versionLabel() = %q", got)
	}
	if code, _, stderr := runCLI(t, "version", "extra"); code != exitUsage {
		t.Errorf("levers9 version extra: exit %d (%s), want %d", code, stderr, exitUsage)
	}
}

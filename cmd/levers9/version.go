package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit is set at build time with -ldflags "-X main.commit=…" (make build
// does, with version); else the VCS revision Go stamped, if any.
var commit = ""

// buildCommit is the commit this binary was built from, or "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// shortCommit is the commit's first 12 characters, for the dashboard.
func shortCommit() string {
	c := buildCommit()
	if len(c) > 12 && c != "unknown" {
		return c[:12]
	}
	return c
}

// versionLabel is the version and commit shown in the dashboard footer.
func versionLabel() string { return version + " (" + shortCommit() + ")" }

// printVersion is levers9 version's output: version, commit, Go.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "levers9 %s\ncommit  %s\ngo      %s %s/%s\n", version, buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "print the version, the commit and the Go version it was built with",
		Args: cobra.NoArgs,
		Run:  func(cmd *cobra.Command, args []string) { printVersion(a.stdout) },
	}
}

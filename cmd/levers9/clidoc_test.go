package main

//go:generate env LEVERS9_WRITE_CLI_REFERENCE=1 go test -run ^TestCLIReference$ -count=1 .

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cliReferencePath is the CLI reference the README links, made from the
// command definitions by writeCLIReference.
const cliReferencePath = "../../docs/cli.md"

// The CLI reference in docs/cli.md is the one the commands make: a new
// command or flag without `go generate ./cmd/levers9` fails here. The file
// is written only when LEVERS9_WRITE_CLI_REFERENCE=1 (go generate), never
// by a plain test run, so CI does not write into the checkout.
func TestCLIReference(t *testing.T) {
	var buf bytes.Buffer
	writeCLIReference(&buf, newRootCommand(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}))
	if os.Getenv("LEVERS9_WRITE_CLI_REFERENCE") == "1" {
		if err := os.WriteFile(cliReferencePath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(cliReferencePath)
	if err != nil {
		t.Fatalf("%v: run go generate ./cmd/levers9", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Fatalf("docs/cli.md is stale: run go generate ./cmd/levers9 and commit it (first difference at line %d)", firstDiffLine(have, buf.Bytes()))
	}
	for _, want := range []string{"## levers9 buckets create", "--storage", "## levers9 top", "## levers9 queue", "-o, --output", "## levers9 cp", "--progress"} {
		if !bytes.Contains(have, []byte(want)) {
			t.Errorf("docs/cli.md lacks %q", want)
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// writeCLIReference writes the Markdown reference of root: the overview
// (the root's help), the global flags, then each visible command in the
// order of its path with its usage, description and own flags.
func writeCLIReference(w io.Writer, root *cobra.Command) {
	fmt.Fprint(w, "# levers9 command line reference\n\n")
	fmt.Fprint(w, "<!-- Generated from the command definitions by go generate ./cmd/levers9; do not edit. -->\n\n")
	fmt.Fprintf(w, "```text\n%s```\n\n", usage)
	fmt.Fprintf(w, "## Global flags\n\nBefore or after the command name.\n\n```text\n%s```\n\n", root.PersistentFlags().FlagUsagesWrapped(100))
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			fmt.Fprintf(w, "## %s\n\n%s.\n\n```text\nlevers9 %s\n```\n\n", sub.CommandPath(), strings.TrimSuffix(sub.Short, "."),
				strings.TrimSpace(strings.TrimPrefix(sub.UseLine(), "levers9 ")))
			if len(sub.Aliases) > 0 {
				fmt.Fprintf(w, "Also: %s.\n\n", strings.Join(sub.Aliases, ", "))
			}
			if sub.DisableFlagParsing {
				fmt.Fprintf(w, "`%s -h` lists its flags.\n\n", sub.CommandPath())
			} else if flags := sub.LocalNonPersistentFlags().FlagUsagesWrapped(100); flags != "" {
				fmt.Fprintf(w, "```text\n%s```\n\n", flags)
			}
			walk(sub)
		}
	}
	walk(root)
}

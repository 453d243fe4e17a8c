package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

const contextUsage = `Usage:
  levers9 context list [--json]      the contexts; * marks the current one
  levers9 context use NAME           make NAME the current context
  levers9 context add NAME --server URL [--token T] [--queue Q] [--project P] [--environment E] [--use]
                                     add a context (the first one added becomes current)
  levers9 context remove NAME        remove a context

Contexts live in ~/.levers9/config (or $LEVERS9_CONFIG), mode 0600.
`

// newContextCommand manages the contexts of the config file.
func newContextCommand(a *app) *cobra.Command {
	list := &cobra.Command{
		Use: "list [--json]", Aliases: []string{"ls"}, Short: "the contexts; * marks the current one",
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return codeErr(contextList(args, a.json, a.stdout, a.stderr))
		},
	}
	use := &cobra.Command{
		Use: "use NAME", Short: "make NAME the current context", ValidArgsFunction: completeFirstContext,
		RunE: func(cmd *cobra.Command, args []string) error { return codeErr(contextUse(args, a.stdout, a.stderr)) },
	}
	var entry contextEntry
	var makeCurrent bool
	add := &cobra.Command{
		Use:   "add NAME --server URL [--token T] [--queue Q] [--project P] [--environment E] [--use]",
		Short: "add a context (the first one added becomes current)", ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return codeErr(contextAdd(args, entry, makeCurrent, a.stdout, a.stderr))
		},
	}
	fs := add.Flags()
	fs.StringVar(&entry.Server, "server", "", "server URL (required)")
	fs.StringVar(&entry.Token, "token", "", "API token")
	fs.StringVar(&entry.Queue, "queue", "", "default queue for submissions")
	fs.StringVar(&entry.Project, "project", "", "default project for submissions")
	fs.StringVar(&entry.Environment, "environment", "", "the environment the token acts in (informational)")
	fs.BoolVar(&makeCurrent, "use", false, "make it the current context")
	remove := &cobra.Command{
		Use: "remove NAME", Aliases: []string{"rm"}, Short: "remove a context", ValidArgsFunction: completeFirstContext,
		RunE: func(cmd *cobra.Command, args []string) error { return codeErr(contextRemove(args, a.stdout, a.stderr)) },
	}
	list.Annotations = map[string]string{annotationJSON: "true"}
	return groupCommand(a, "context", "manage the contexts in ~/.levers9/config", contextUsage, list, use, add, remove)
}

// completeFirstContext completes a command's one argument, a context name.
func completeFirstContext(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeContexts(cmd, args, toComplete)
}

func contextList(args []string, asJSON bool, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprint(stderr, contextUsage)
		return exitUsage
	}
	cfg, err := loadConfig(false, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 context list:", err)
		return exitError
	}
	names := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	if asJSON {
		type row struct {
			Name        string `json:"name"`
			Current     bool   `json:"current"`
			Server      string `json:"server"`
			TokenHint   string `json:"tokenHint"`
			Queue       string `json:"queue"`
			Project     string `json:"project"`
			Environment string `json:"environment"`
		}
		rows := []row{}
		for _, n := range names {
			c := cfg.Contexts[n]
			rows = append(rows, row{n, n == cfg.Current, c.Server, hint(c.Token), c.Queue, c.Project, c.Environment})
		}
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CURRENT\tNAME\tSERVER\tTOKEN\tQUEUE\tPROJECT\tENVIRONMENT")
	for _, n := range names {
		c := cfg.Contexts[n]
		mark := ""
		if n == cfg.Current {
			mark = "*"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, n, c.Server, orDash(hint(c.Token)), orDash(c.Queue), orDash(c.Project), orDash(c.Environment))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

func contextUse(args []string, stdout, stderr io.Writer) int {
	cfg, name, code, ok := namedContext("use", args, stderr)
	if !ok {
		return code
	}
	cfg.Current = name
	if err := cfg.save(); err != nil {
		fmt.Fprintln(stderr, "levers9 context use:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "Current context: %s\n", name)
	return exitOK
}

func contextAdd(args []string, c contextEntry, makeCurrent bool, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, contextUsage)
		return exitUsage
	}
	name := args[0]
	if err := checkContextName(name); err != nil {
		fmt.Fprintln(stderr, "levers9 context add:", err)
		return exitUsage
	}
	server, err := serverURL(c.Server)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 context add:", err)
		return exitUsage
	}
	c.Server = server
	cfg, err := loadConfig(true, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 context add:", err)
		return exitError
	}
	if _, exists := cfg.Contexts[name]; exists {
		fmt.Fprintf(stderr, "levers9 context add: context %q exists; remove it first (levers9 context remove %s)\n", name, name)
		return exitError
	}
	cfg.Contexts[name] = c
	if makeCurrent || cfg.Current == "" {
		cfg.Current = name
	}
	if err := cfg.save(); err != nil {
		fmt.Fprintln(stderr, "levers9 context add:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "Added context %s (%s)", name, c.Server)
	if cfg.Current == name {
		fmt.Fprint(stdout, "; it is current")
	}
	fmt.Fprintln(stdout)
	return exitOK
}

func contextRemove(args []string, stdout, stderr io.Writer) int {
	cfg, name, code, ok := namedContext("remove", args, stderr)
	if !ok {
		return code
	}
	delete(cfg.Contexts, name)
	if cfg.Current == name {
		cfg.Current = ""
	}
	if err := cfg.save(); err != nil {
		fmt.Fprintln(stderr, "levers9 context remove:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "Removed context %s\n", name)
	return exitOK
}

// printJSON prints v indented, for scripts.
func printJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(stderr, "levers9:", err)
		return exitError
	}
	return exitOK
}

// orDash shows empty cells as "-", so columns stay readable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// namedContext parses the one argument of `context use|remove NAME` and
// loads the configuration, which must hold NAME; else it returns the exit
// code, having said why.
func namedContext(verb string, args []string, stderr io.Writer) (*config, string, int, bool) {
	if len(args) != 1 {
		fmt.Fprint(stderr, contextUsage)
		return nil, "", exitUsage, false
	}
	name := args[0]
	cfg, err := loadConfig(true, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "levers9 context %s: %v\n", verb, err)
		return nil, "", exitError, false
	}
	if _, ok := cfg.Contexts[name]; !ok {
		fmt.Fprintf(stderr, "levers9 context %s: %v\n", verb, errUnknownContext(name))
		return nil, "", exitUsage, false
	}
	return cfg, name, 0, true
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

const contextUsage = `Usage:
  levers9 context list [--json]      the contexts; * marks the current one
  levers9 context use NAME           make NAME the current context
  levers9 context add NAME --server URL [--token T] [--queue Q] [--project P] [--environment E] [--use]
                                     add a context (the first one added becomes current)
  levers9 context remove NAME        remove a context

Contexts live in ~/.levers9/config (or $LEVERS9_CONFIG), mode 0600.
`

// runContext manages the contexts of the config file.
func runContext(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, contextUsage)
		return exitUsage
	}
	switch args[0] {
	case "list", "ls":
		return contextList(args[1:], stdout, stderr)
	case "use":
		return contextUse(args[1:], stdout, stderr)
	case "add":
		return contextAdd(args[1:], stdout, stderr)
	case "remove", "rm":
		return contextRemove(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, contextUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "levers9 context: unknown subcommand %q\n\n%s", args[0], contextUsage)
	return exitUsage
}

// contextFlagSet is a flag set whose usage is the context usage.
func contextFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("levers9 context "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, contextUsage) }
	return fs
}

func contextList(args []string, stdout, stderr io.Writer) int {
	fs := contextFlagSet("list", stderr)
	asJSON := fs.Bool("json", false, "print JSON (tokens left out)")
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if fs.NArg() != 0 {
		fs.Usage()
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
	if *asJSON {
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

func contextAdd(args []string, stdout, stderr io.Writer) int {
	fs := contextFlagSet("add", stderr)
	var c contextEntry
	fs.StringVar(&c.Server, "server", "", "server URL (required)")
	fs.StringVar(&c.Token, "token", "", "API token")
	fs.StringVar(&c.Queue, "queue", "", "default queue for submissions")
	fs.StringVar(&c.Project, "project", "", "default project for submissions")
	fs.StringVar(&c.Environment, "environment", "", "the environment the token acts in (informational)")
	use := fs.Bool("use", false, "make it the current context")
	// NAME may come before the flags: levers9 context add prod --server …
	var name string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() != 0 || name == "" {
		fs.Usage()
		return exitUsage
	}
	if err := checkContextName(name); err != nil {
		fmt.Fprintln(stderr, "levers9 context add:", err)
		return exitUsage
	}
	if err := checkServerURL(c.Server); err != nil {
		fmt.Fprintln(stderr, "levers9 context add:", err)
		return exitUsage
	}
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
	if *use || cfg.Current == "" {
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
	fs := contextFlagSet(verb, stderr)
	if err := fs.Parse(args); err != nil {
		return nil, "", usageExit(err), false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, "", exitUsage, false
	}
	name := fs.Arg(0)
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

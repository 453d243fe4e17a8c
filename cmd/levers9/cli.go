package main

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// app is what every command shares: its streams and the global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	conn           clientFlags // -c/--context, --server, --token
	json           bool        // --json
}

// exitCode ends a command that has already said why it stopped.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// codeErr is a command body's exit code as the command library's error.
func codeErr(code int) error {
	if code == exitOK {
		return nil
	}
	return exitCode(code)
}

// usageError is bad usage the command library found (an unknown command
// or flag, a bad flag value): it is said, with where to find help, and the
// command exits 2.
type usageError struct {
	cmd string // the command path, "levers9 jobs"
	err error
}

func (e usageError) Error() string { return e.err.Error() }

// Annotations of the commands that take the global flags.
const (
	annotationClient = "levers9/client" // -c, --server, --token
	annotationJSON   = "levers9/json"   // --json
)

// client marks cmd as connecting to the server (and, with asJSON, as
// printing JSON with --json).
func client(cmd *cobra.Command, asJSON bool) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationClient] = "true"
	if asJSON {
		cmd.Annotations[annotationJSON] = "true"
	}
	return cmd
}

// newRootCommand is levers9 and all its commands.
func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "levers9",
		Short:         "a self-hosted, multi-tenant GPU compute platform",
		SilenceErrors: true,
		SilenceUsage:  true,
		// levers9 alone: the usage, as bad usage.
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprint(a.stderr, usage)
			return exitCode(exitUsage)
		},
		PersistentPreRunE: a.checkGlobalFlags,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{cmd.CommandPath(), err}
	})
	// The root's help is the hand-written overview; each command's is
	// made from its flags.
	commandHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		switch {
		case cmd == root:
			fmt.Fprint(a.stdout, usage)
		case cmd.DisableFlagParsing && !cmd.Hidden:
			// server and agent read their own flags: their -h lists them.
			_ = cmd.RunE(cmd, []string{"-h"})
		default:
			commandHelp(cmd, args)
		}
	})

	global := root.PersistentFlags()
	a.conn.register(global)
	global.BoolVar(&a.json, "json", false, "print JSON, for scripts (jobs, queue, job show, logs, ls, buckets, tokens, token, invite, queues, nodes, top, context list, task show, app list, secret list, sandbox list, blueprint list)")
	_ = root.RegisterFlagCompletionFunc("context", completeContexts)

	root.AddCommand(
		newServerCommand(a), newAgentCommand(a), newSupervisorCommand(),
		newLoginCommand(a), newContextCommand(a),
		newRunCommand(a, "run"), newRunCommand(a, "submit"),
		newJobsCommand(a), newJobCommand(a), newLogsCommand(a), newCancelCommand(a),
		newExecCommand(a), newAttachCommand(a), newPortForwardCommand(a),
		newLsCommand(a), newCpCommand(a), newRmCommand(a), newBucketsCommand(a),
		newTokensCommand(a), newTokenCommand(a), newInviteCommand(a),
		newQueuesCommand(a), newNodesCommand(a), newNodeCommand(a), newTopCommand(a),
		newTaskCommand(a), newAppCommand(a),
		newPythonAppCommand(a, "deploy"), newPythonAppCommand(a, "serve"),
		newSecretCommand(a), newQueueCommand(a),
		newBoxCommand(a),
		newSandboxCommand(a), newBlueprintCommand(a),
		newVersionCommand(a), newAdminCommand(a),
	)
	// Each Use line shows the command's flags itself.
	var noFlagsInUse func(*cobra.Command)
	noFlagsInUse = func(c *cobra.Command) {
		c.DisableFlagsInUseLine = true
		for _, sub := range c.Commands() {
			noFlagsInUse(sub)
		}
	}
	noFlagsInUse(root)
	return root
}

// checkGlobalFlags refuses a global flag given to a command it means
// nothing to, as the command's own flag would be: bad usage.
func (a *app) checkGlobalFlags(cmd *cobra.Command, _ []string) error {
	global := cmd.Root().PersistentFlags()
	if cmd.Annotations[annotationClient] == "" && cmd.Name() != "version" {
		for _, name := range []string{"context", "server", "token"} {
			if global.Lookup(name).Changed {
				return usageError{cmd.CommandPath(), fmt.Errorf("--%s: %s does not connect to a server", name, cmd.CommandPath())}
			}
		}
	}
	if a.json && cmd.Annotations[annotationJSON] == "" {
		return usageError{cmd.CommandPath(), fmt.Errorf("--json: %s prints no JSON", cmd.CommandPath())}
	}
	return nil
}

// exitCodeOfRun is the exit code of a finished command line: a command's
// own code, or 2 for bad usage, said on stderr.
func exitCodeOfRun(cmd *cobra.Command, err error, stderr io.Writer) int {
	var code exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	case errors.Is(err, pflag.ErrHelp):
		return exitOK
	}
	name := "levers9"
	var u usageError
	if errors.As(err, &u) {
		name = u.cmd
	} else if cmd != nil {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
	return exitUsage
}

// groupCommand is a command made of sub-commands (levers9 token create|…):
// alone or with an unknown sub-command it is bad usage, said with
// usageText.
func groupCommand(a *app, use, short, usageText string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  usageText,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				fmt.Fprintf(a.stderr, "%s: unknown subcommand %q\n\n", cmd.CommandPath(), args[0])
			}
			fmt.Fprint(a.stderr, usageText)
			return exitCode(exitUsage)
		},
	}
	cmd.AddCommand(subs...)
	// Its sub-commands are the only completions.
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	return cmd
}

// connected is the RunE of a client command: the connection is resolved
// from the global flags, the environment and the config file, then body
// runs. body says why it fails and returns the exit code.
func (a *app) connected(body func(cmd *cobra.Command, c clientFlags, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c := a.conn
		if err := c.resolve(); err != nil {
			fmt.Fprintf(a.stderr, "%s: %v\n", cmd.CommandPath(), err)
			var unknown errUnknownContext
			var badServer errBadServer
			if errors.As(err, &unknown) || errors.As(err, &badServer) {
				return exitCode(exitUsage)
			}
			return exitCode(exitError)
		}
		return codeErr(body(cmd, c, args))
	}
}

// completeContexts completes -c with the names in the config file.
func completeContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	cfg, err := loadConfig(false, nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

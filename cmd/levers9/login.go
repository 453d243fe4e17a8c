package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// loginFlags are what levers9 login takes.
type loginFlags struct {
	server, email, token, name, queue, project string
}

// newLoginCommand signs in and stores the connection as a context: with
// --token it checks and stores that token; otherwise it asks for the
// email and password (the password without echo on a terminal), signs in
// and creates an API token for this machine.
func newLoginCommand(a *app) *cobra.Command {
	var f loginFlags
	cmd := &cobra.Command{
		Use:               "login [--server URL] [--email EMAIL | --token TOKEN] [--name CONTEXT]",
		Short:             "sign in and store the connection as the current context",
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				fmt.Fprintf(a.stderr, "Usage: %s\n%s", cmd.UseLine(), cmd.LocalFlags().FlagUsages())
				return exitCode(exitUsage)
			}
			return codeErr(login(cmd.Context(), f, a.stdin, a.stdout, a.stderr))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", "", "server URL (asked when missing)")
	fs.StringVar(&f.email, "email", "", "email to sign in with (asked when missing)")
	fs.StringVar(&f.token, "token", "", "an API token to store instead of signing in")
	fs.StringVar(&f.name, "name", "", "context name (default: the server's host)")
	fs.StringVar(&f.queue, "queue", "", "default queue for submissions")
	fs.StringVar(&f.project, "project", "", "default project for submissions")
	return cmd
}

// login signs in as f says, asking on stdin for what is missing.
func login(ctx context.Context, f loginFlags, stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	fail := func(err error) int {
		fmt.Fprintln(stderr, "levers9 login:", err)
		return exitError
	}
	if f.server == "" {
		def := first(os.Getenv("LEVERS9_SERVER"), defaultServer)
		s, err := ask(in, stderr, fmt.Sprintf("Server [%s]: ", def))
		if err != nil {
			return fail(err)
		}
		f.server = first(s, def)
	}
	server, err := serverURL(f.server)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 login:", err)
		return exitUsage
	}
	f.server = server
	if f.name == "" {
		u, _ := url.Parse(f.server)
		f.name = u.Host
	}
	if err := checkContextName(f.name); err != nil {
		fmt.Fprintln(stderr, "levers9 login:", err)
		return exitUsage
	}
	// Fail on a loose config file before asking for a password.
	cfg, err := loadConfig(true, stderr)
	if err != nil {
		return fail(err)
	}
	c := clientFlags{Server: f.server, Token: f.token}
	if c.Token == "" {
		if c.Token, err = signIn(ctx, c, in, stdin, stderr, f.email); err != nil {
			return fail(err)
		}
	}
	var me struct {
		Viewer struct {
			User        struct{ Email string }
			Tenant      *struct{ Name string }
			Environment *struct{ Name string }
		}
	}
	if err := c.query(ctx, `{ viewer { user { email } tenant { name } environment { name } } }`, nil, &me); err != nil {
		return fail(err)
	}
	entry := contextEntry{Server: c.Server, Token: c.Token, Queue: f.queue, Project: f.project}
	tenant := "no tenant"
	if me.Viewer.Tenant != nil {
		tenant = "tenant " + me.Viewer.Tenant.Name
	}
	if me.Viewer.Environment != nil {
		entry.Environment = me.Viewer.Environment.Name
	}
	cfg.Contexts[f.name] = entry
	cfg.Current = f.name
	if err := cfg.save(); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "Logged in to %s as %s (%s). Context %s is current.\n", c.Server, me.Viewer.User.Email, tenant, f.name)
	return exitOK
}

// signIn asks for what is missing, signs in, creates an API token with
// the session and ends the session; the API token outlives it.
func signIn(ctx context.Context, c clientFlags, in *bufio.Reader, stdin io.Reader, stderr io.Writer, email string) (string, error) {
	var err error
	if email == "" {
		if email, err = ask(in, stderr, "Email: "); err != nil {
			return "", err
		}
	}
	if email == "" {
		return "", errors.New("an email is needed to sign in (or pass --token)")
	}
	password, err := askPassword(in, stdin, stderr)
	if err != nil {
		return "", err
	}
	var session struct{ SignIn struct{ Token string } }
	err = c.send(ctx, "", `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }`,
		map[string]any{"e": email, "p": password}, &session)
	if err != nil {
		return "", fmt.Errorf("signing in: %w", err)
	}
	host, _ := os.Hostname()
	var created struct{ CreateAPIToken struct{ Token string } }
	c.Token = session.SignIn.Token
	err = c.query(ctx, `mutation($n: String!) { createAPIToken(name: $n) { token } }`,
		map[string]any{"n": "levers9 CLI on " + first(host, "this machine")}, &created)
	if err != nil {
		return "", fmt.Errorf("creating an API token: %w", err)
	}
	// The session did its one job: ended now, it is not a second
	// long-lived credential left on the server next to the API token.
	var out struct{ SignOut bool }
	if err := c.query(ctx, `mutation { signOut }`, nil, &out); err != nil {
		fmt.Fprintf(stderr, "levers9 login: warning: ending the sign-in session: %v (it expires by itself)\n", err)
	}
	return created.CreateAPIToken.Token, nil
}

// ask prints prompt on stderr and reads one line; at the end of the
// input the answer is empty (the default, where there is one).
func ask(in *bufio.Reader, stderr io.Writer, prompt string) (string, error) {
	fmt.Fprint(stderr, prompt)
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// askPassword reads the password without echo from a terminal, or a line
// from a pipe (scripts).
func askPassword(in *bufio.Reader, stdin io.Reader, stderr io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "Password: ")
		p, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		return string(p), nil
	}
	line, err := in.ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

const tokenUsage = `Usage:
  levers9 token create [--expires DURATION] [--json] NAME   create an API token (the secret is shown once)
  levers9 token list [--json]                               your API tokens and sessions
  levers9 token revoke ID...                                revoke tokens
`

type apiTokenRow struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Hint       string     `json:"hint"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
}

const apiTokenFields = `id name kind hint createdAt lastUsedAt expiresAt revokedAt`

// runToken manages API tokens: levers9 token create|list|revoke.
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return exitUsage
	}
	var c clientFlags
	fs := flag.NewFlagSet("levers9 token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, tokenUsage) }
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	switch args[0] {
	case "create":
		expires := fs.Duration("expires", 0, "lifetime, such as 720h (0: never expires)")
		if code, ok := c.parse(fs, args[1:], stderr); !ok {
			return code
		}
		if fs.NArg() != 1 || *expires < 0 {
			fs.Usage()
			return exitUsage
		}
		vars := map[string]any{"n": fs.Arg(0)}
		if *expires > 0 {
			vars["e"] = time.Now().Add(*expires).UTC().Format(time.RFC3339)
		}
		var out struct {
			CreateAPIToken struct {
				Token    string      `json:"token"`
				APIToken apiTokenRow `json:"apiToken"`
			} `json:"createAPIToken"`
		}
		if err := c.query(ctx, `mutation($n: String!, $e: Time) { createAPIToken(name: $n, expiresAt: $e) { token apiToken { `+apiTokenFields+` } } }`, vars, &out); err != nil {
			fmt.Fprintln(stderr, "levers9 token create:", err)
			return exitError
		}
		if *asJSON {
			return printJSON(stdout, stderr, out.CreateAPIToken)
		}
		fmt.Fprintf(stdout, "Created API token %s (%s). The secret, shown once:\n%s\n", out.CreateAPIToken.APIToken.Name, out.CreateAPIToken.APIToken.ID, out.CreateAPIToken.Token)
		return exitOK
	case "list", "ls":
		if code, ok := c.parse(fs, args[1:], stderr); !ok {
			return code
		}
		if fs.NArg() != 0 {
			fs.Usage()
			return exitUsage
		}
		rows, err := listRows[apiTokenRow](ctx, c, "apiTokens", `{ apiTokens(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node { `+apiTokenFields+` } } } }`)
		if err != nil {
			fmt.Fprintln(stderr, "levers9 token list:", err)
			return exitError
		}
		if *asJSON {
			return printJSON(stdout, stderr, rows)
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tKIND\tHINT\tCREATED\tLAST USED\tEXPIRES\tREVOKED")
		for _, t := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\t%s\n", t.ID, orDash(t.Name), t.Kind, t.Hint,
				t.CreatedAt.Local().Format(time.DateTime), timeOrDash(t.LastUsedAt), timeOrDash(t.ExpiresAt), timeOrDash(t.RevokedAt))
		}
		if err := w.Flush(); err != nil {
			return exitError
		}
		return exitOK
	case "revoke":
		if code, ok := c.parse(fs, args[1:], stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			fs.Usage()
			return exitUsage
		}
		return eachID(fs.Args(), stdout, stderr, "levers9 token revoke", func(id string) (string, error) {
			var out struct{ RevokeAPIToken apiTokenRow }
			err := c.query(ctx, `mutation($id: ID!) { revokeAPIToken(id: $id) { `+apiTokenFields+` } }`, map[string]any{"id": id}, &out)
			return fmt.Sprintf("revoked %s (%s)", out.RevokeAPIToken.ID, out.RevokeAPIToken.Name), err
		})
	case "-h", "--help", "help":
		fmt.Fprint(stdout, tokenUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "levers9 token: unknown subcommand %q\n\n%s", args[0], tokenUsage)
	return exitUsage
}

// eachID runs do for every ID, prints its result or its error, and fails
// when any failed.
func eachID(ids []string, stdout, stderr io.Writer, cmd string, do func(id string) (string, error)) int {
	code := exitOK
	for _, id := range ids {
		msg, err := do(id)
		if err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", cmd, id, err)
			code = exitError
			continue
		}
		fmt.Fprintln(stdout, msg)
	}
	return code
}

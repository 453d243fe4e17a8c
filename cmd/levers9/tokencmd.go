package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
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

// newTokenCommand manages API tokens: levers9 token create|list|revoke.
func newTokenCommand(a *app) *cobra.Command {
	var expires time.Duration
	create := &cobra.Command{
		Use:               "create [--expires DURATION] [--json] NAME",
		Short:             "create an API token (the secret is shown once)",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	create.Flags().Var(durationValue{&expires}, "expires", "lifetime, such as 720h or 30d (0: never expires)")
	create.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 {
			fmt.Fprint(a.stderr, tokenUsage)
			return exitUsage
		}
		return createToken(cmd.Context(), c, args[0], expires, a.json, a.stdout, a.stderr)
	})
	list := &cobra.Command{
		Use:               "list [--json]",
		Aliases:           []string{"ls"},
		Short:             "your API tokens and sessions",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	list.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, tokenUsage)
			return exitUsage
		}
		return listTokens(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	revoke := &cobra.Command{
		Use:               "revoke ID...",
		Short:             "revoke tokens",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	revoke.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(a.stderr, tokenUsage)
			return exitUsage
		}
		return revokeTokens(cmd.Context(), c, args, a.stdout, a.stderr)
	})
	return groupCommand(a, "token", "API tokens", tokenUsage, client(create, true), client(list, true), client(revoke, true))
}

// createToken creates the API token name, expiring after expires (0: never).
func createToken(ctx context.Context, c clientFlags, name string, expires time.Duration, asJSON bool, stdout, stderr io.Writer) int {
	vars := map[string]any{"n": name}
	if expires > 0 {
		vars["e"] = time.Now().Add(expires).UTC().Format(time.RFC3339)
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
	if asJSON {
		return printJSON(stdout, stderr, out.CreateAPIToken)
	}
	fmt.Fprintf(stdout, "Created API token %s (%s). The secret, shown once:\n%s\n", out.CreateAPIToken.APIToken.Name, out.CreateAPIToken.APIToken.ID, out.CreateAPIToken.Token)
	return exitOK
}

// listTokens prints the viewer's API tokens and sessions.
func listTokens(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[apiTokenRow](ctx, c, "apiTokens", `{ apiTokens(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node { `+apiTokenFields+` } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 token list:", err)
		return exitError
	}
	if asJSON {
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
}

// revokeTokens revokes the tokens ids.
func revokeTokens(ctx context.Context, c clientFlags, ids []string, stdout, stderr io.Writer) int {
	return eachID(ids, stdout, stderr, "levers9 token revoke", func(id string) (string, error) {
		var out struct{ RevokeAPIToken apiTokenRow }
		err := c.query(ctx, `mutation($id: ID!) { revokeAPIToken(id: $id) { `+apiTokenFields+` } }`, map[string]any{"id": id}, &out)
		return fmt.Sprintf("revoked %s (%s)", out.RevokeAPIToken.ID, out.RevokeAPIToken.Name), err
	})
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

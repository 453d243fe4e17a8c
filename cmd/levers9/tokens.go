package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/spf13/cobra"
)

const tokensQuery = `query($n: Int!) {
  viewer { user { email } balance }
  projects(first: 100, orderBy: {field: NAME, direction: ASC}) { edges { node { name balance } } }
  charges(first: $n, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node {
    createdAt kind tokens amount direction balanceChange payerKind reason job { id name } project { name }
  } } }
}`

// newTokensCommand prints the viewer's balance, their projects' balances
// and their most recent charges, newest first.
func newTokensCommand(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:               "tokens [-n N] [--json]",
		Short:             "your token balance, your projects' and recent charges",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "how many recent charges to show (at most 1000)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if limit < 0 || limit > 1000 {
			fmt.Fprintln(a.stderr, "levers9 tokens: -n must be between 0 and 1000")
			return exitUsage
		}
		return printTokens(cmd.Context(), c, limit, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}

// printTokens prints the balances and the last limit charges.
func printTokens(ctx context.Context, c clientFlags, limit int, asJSON bool, stdout, stderr io.Writer) int {
	// JSON tags in GraphQL's spelling: --json prints the answer as is.
	var out struct {
		Viewer struct {
			User struct {
				Email string `json:"email"`
			} `json:"user"`
			Balance *json.Number `json:"balance"`
		} `json:"viewer"`
		Projects struct {
			Edges []struct {
				Node struct {
					Name    string       `json:"name"`
					Balance *json.Number `json:"balance"`
				} `json:"node"`
			} `json:"edges"`
		} `json:"projects"`
		Charges struct {
			Edges []struct {
				Node struct {
					CreatedAt time.Time `json:"createdAt"`
					Kind      string    `json:"kind"`
					// Tokens is the ledger's signed spending (grants
					// negative); people read direction and balanceChange.
					Tokens        json.Number `json:"tokens"`
					Amount        json.Number `json:"amount"`
					Direction     string      `json:"direction"`
					BalanceChange json.Number `json:"balanceChange"`
					PayerKind     string      `json:"payerKind"`
					Reason        string      `json:"reason"`
					Job           *struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"job"`
					Project *struct {
						Name string `json:"name"`
					} `json:"project"`
				} `json:"node"`
			} `json:"edges"`
		} `json:"charges"`
	}
	if err := c.query(ctx, tokensQuery, map[string]any{"n": limit}, &out); err != nil {
		fmt.Fprintln(stderr, "levers9 tokens:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, out)
	}
	bal := "unknown"
	if out.Viewer.Balance != nil {
		bal = plainTokens(*out.Viewer.Balance)
	}
	fmt.Fprintf(stdout, "Balance of %s: %s tokens\n", out.Viewer.User.Email, bal)
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(out.Projects.Edges) > 0 {
		fmt.Fprintln(w, "\nPROJECT\tBALANCE")
		for _, e := range out.Projects.Edges {
			if e.Node.Balance != nil { // only projects the user is a member of
				fmt.Fprintf(w, "%s\t%s\n", e.Node.Name, plainTokens(*e.Node.Balance))
			}
		}
	}
	// As on a statement: CREDIT (+) adds to the payer's balance, DEBIT (−)
	// takes from it.
	fmt.Fprintln(w, "\nTIME\tKIND\tENTRY\tTOKENS\tPAID BY\tJOB\tREASON")
	for _, e := range out.Charges.Edges {
		n := e.Node
		paidBy := "you"
		if n.Project != nil {
			paidBy = "project " + n.Project.Name
		}
		jobRef := "-"
		if n.Job != nil {
			jobRef = n.Job.ID
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.CreatedAt.UTC().Format(time.DateTime), n.Kind, n.Direction,
			signedTokens(n.BalanceChange), paidBy, jobRef, n.Reason)
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// signedTokens shows a change of balance from the server as a statement
// does (ledger.Signed); an amount it cannot read is shown as sent.
func signedTokens(n json.Number) string {
	t, err := billing.ParseTokens(n.String())
	if err != nil {
		return n.String()
	}
	return ledger.Signed(t)
}

// plainTokens shows a balance from the server (ledger.Plain).
func plainTokens(n json.Number) string {
	t, err := billing.ParseTokens(n.String())
	if err != nil {
		return n.String()
	}
	return ledger.Plain(t)
}

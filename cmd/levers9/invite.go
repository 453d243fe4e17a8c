package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const inviteUsage = `Usage:
  levers9 invite create [--name NODE] [--expires DURATION] [--json]   an invite for a machine to join as a node
  levers9 invite list [--json]                                        invites and what became of them
  levers9 invite revoke ID...                                         revoke unused invites
`

type inviteRow struct {
	ID        string     `json:"id"`
	NodeName  string     `json:"nodeName"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt"`
	UsedAt    *time.Time `json:"usedAt"`
	NodeID    *string    `json:"nodeID"`
	RevokedAt *time.Time `json:"revokedAt"`
}

const inviteFields = `id nodeName createdAt expiresAt usedAt nodeID revokedAt`

// state says what became of an invite.
func (i inviteRow) state(now time.Time) string {
	switch {
	case i.RevokedAt != nil:
		return "revoked"
	case i.UsedAt != nil:
		return "used"
	case now.After(i.ExpiresAt):
		return "expired"
	}
	return "open"
}

// newInviteCommand manages node invites: levers9 invite create|list|revoke.
func newInviteCommand(a *app) *cobra.Command {
	var name string
	var expires time.Duration
	create := &cobra.Command{
		Use:               "create [--name NODE] [--expires DURATION] [--json]",
		Short:             "an invite for a machine to join as a node",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	create.Flags().StringVar(&name, "name", "", "the name the joining node gets")
	create.Flags().Var(durationValue{&expires}, "expires", "how long the invite is valid, such as 2h or 7d (0: the server's default)")
	create.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, inviteUsage)
			return exitUsage
		}
		return createInvite(cmd.Context(), c, name, expires, a.json, a.stdout, a.stderr)
	})
	list := &cobra.Command{
		Use:               "list [--json]",
		Aliases:           []string{"ls"},
		Short:             "invites and what became of them",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	list.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, inviteUsage)
			return exitUsage
		}
		return listInvites(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	revoke := &cobra.Command{
		Use:               "revoke ID...",
		Short:             "revoke unused invites",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	revoke.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(a.stderr, inviteUsage)
			return exitUsage
		}
		return revokeInvites(cmd.Context(), c, args, a.stdout, a.stderr)
	})
	return groupCommand(a, "invite", "invites for machines to join as nodes", inviteUsage,
		client(create, true), client(list, true), client(revoke, true))
}

// createInvite creates an invite for the node name ("": the joiner's
// choice), valid for expires (0: the server's default).
func createInvite(ctx context.Context, c clientFlags, name string, expires time.Duration, asJSON bool, stdout, stderr io.Writer) int {
	vars := map[string]any{}
	if name != "" {
		vars["n"] = name
	}
	if expires > 0 {
		vars["e"] = int(expires.Seconds())
	}
	var out struct {
		CreateNodeInvite struct {
			Code        string    `json:"code"`
			JoinCommand string    `json:"joinCommand"`
			Invite      inviteRow `json:"invite"`
		} `json:"createNodeInvite"`
	}
	if err := c.query(ctx, `mutation($n: String, $e: Int) { createNodeInvite(nodeName: $n, expiresInSeconds: $e) { code joinCommand invite { `+inviteFields+` } } }`, vars, &out); err != nil {
		fmt.Fprintln(stderr, "levers9 invite create:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, out.CreateNodeInvite)
	}
	inv := out.CreateNodeInvite
	fmt.Fprintf(stdout, "Invite %s, valid until %s. On the machine, run (the code is shown once):\n  %s\n",
		inv.Invite.ID, inv.Invite.ExpiresAt.Local().Format(time.DateTime), inv.JoinCommand)
	return exitOK
}

// listInvites prints the invites and what became of them.
func listInvites(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[inviteRow](ctx, c, "nodeInvites", `{ nodeInvites(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node { `+inviteFields+` } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 invite list:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	now := time.Now()
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNODE NAME\tSTATE\tCREATED\tEXPIRES\tNODE")
	for _, i := range rows {
		node := "-"
		if i.NodeID != nil {
			node = *i.NodeID
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, orDash(i.NodeName), i.state(now),
			i.CreatedAt.Local().Format(time.DateTime), i.ExpiresAt.Local().Format(time.DateTime), node)
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// revokeInvites revokes the invites ids.
func revokeInvites(ctx context.Context, c clientFlags, ids []string, stdout, stderr io.Writer) int {
	return eachID(ids, stdout, stderr, "levers9 invite revoke", func(id string) (string, error) {
		var out struct{ RevokeNodeInvite inviteRow }
		err := c.query(ctx, `mutation($id: ID!) { revokeNodeInvite(id: $id) { `+inviteFields+` } }`, map[string]any{"id": id}, &out)
		return "revoked " + out.RevokeNodeInvite.ID, err
	})
}

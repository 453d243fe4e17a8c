package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
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

// runInvite manages node invites: levers9 invite create|list|revoke.
func runInvite(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, inviteUsage)
		return exitUsage
	}
	var c clientFlags
	fs := flag.NewFlagSet("levers9 invite "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, inviteUsage) }
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	switch args[0] {
	case "create":
		name := fs.String("name", "", "the name the joining node gets")
		expires := fs.Duration("expires", 0, "how long the invite is valid (0: the server's default)")
		if code, ok := c.parse(fs, args[1:], stderr); !ok {
			return code
		}
		if fs.NArg() != 0 || *expires < 0 {
			fs.Usage()
			return exitUsage
		}
		vars := map[string]any{}
		if *name != "" {
			vars["n"] = *name
		}
		if *expires > 0 {
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
		if *asJSON {
			return printJSON(stdout, stderr, out.CreateNodeInvite)
		}
		inv := out.CreateNodeInvite
		fmt.Fprintf(stdout, "Invite %s, valid until %s. On the machine, run (the code is shown once):\n  %s\n",
			inv.Invite.ID, inv.Invite.ExpiresAt.Local().Format(time.DateTime), inv.JoinCommand)
		return exitOK
	case "list", "ls":
		if code, ok := c.parse(fs, args[1:], stderr); !ok {
			return code
		}
		if fs.NArg() != 0 {
			fs.Usage()
			return exitUsage
		}
		rows, err := listRows[inviteRow](ctx, c, "nodeInvites", `{ nodeInvites(first: 1000, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node { `+inviteFields+` } } } }`)
		if err != nil {
			fmt.Fprintln(stderr, "levers9 invite list:", err)
			return exitError
		}
		if *asJSON {
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
	case "revoke":
		if code, ok := c.parse(fs, args[1:], stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			fs.Usage()
			return exitUsage
		}
		return eachID(fs.Args(), stdout, stderr, "levers9 invite revoke", func(id string) (string, error) {
			var out struct{ RevokeNodeInvite inviteRow }
			err := c.query(ctx, `mutation($id: ID!) { revokeNodeInvite(id: $id) { `+inviteFields+` } }`, map[string]any{"id": id}, &out)
			return "revoked " + out.RevokeNodeInvite.ID, err
		})
	case "-h", "--help", "help":
		fmt.Fprint(stdout, inviteUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "levers9 invite: unknown subcommand %q\n\n%s", args[0], inviteUsage)
	return exitUsage
}

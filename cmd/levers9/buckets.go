package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const bucketsUsage = `Usage:
  levers9 buckets [list] [--json]                  the buckets you may see
  levers9 buckets create NAME [--storage STORAGE] [--project PROJECT]
                                                   create a bucket (tenant admins)
  levers9 buckets delete NAME...                   delete buckets (tenant admins)
`

type bucketRow struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	SizeBytes int64     `json:"sizeBytes"`
	CreatedAt time.Time `json:"createdAt"`
	Storage   struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	} `json:"storage"`
	Project *struct {
		Name string `json:"name"`
	} `json:"project"`
}

// newBucketsCommand is levers9 buckets [list|create|delete]: alone it
// lists, as kubectl get and squeue do.
func newBucketsCommand(a *app) *cobra.Command {
	listRun := a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprintf(a.stderr, "levers9 buckets: unknown subcommand %q\n\n%s", args[0], bucketsUsage)
			return exitUsage
		}
		return listBuckets(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	list := &cobra.Command{Use: "list [--json]", Aliases: []string{"ls"}, Short: "the buckets you may see",
		ValidArgsFunction: cobra.NoFileCompletions, RunE: listRun}

	var storageName, project string
	create := &cobra.Command{Use: "create NAME [--storage STORAGE] [--project PROJECT]",
		Short:             "create a bucket (tenant admins); --storage may be left out when there is one storage",
		ValidArgsFunction: cobra.NoFileCompletions}
	create.Flags().StringVar(&storageName, "storage", "", "the storage holding it, by name or ID (default: the only one)")
	create.Flags().StringVar(&project, "project", "", "the project paying for its storage, by name (default: you pay)")
	create.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 {
			fmt.Fprint(a.stderr, bucketsUsage)
			return exitUsage
		}
		return createBucket(cmd.Context(), c, args[0], storageName, project, a.json, a.stdout, a.stderr)
	})

	del := &cobra.Command{Use: "delete NAME...", Aliases: []string{"rm"}, Short: "delete buckets (tenant admins)",
		ValidArgsFunction: cobra.NoFileCompletions}
	del.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(a.stderr, bucketsUsage)
			return exitUsage
		}
		return eachID(args, a.stdout, a.stderr, "levers9 buckets delete", func(name string) (string, error) {
			id, err := c.idByName(cmd.Context(), "buckets", "bucket", name)
			if err != nil {
				return "", err
			}
			var out map[string]any
			if err := c.query(cmd.Context(), `mutation($id: ID!) { deleteBucket(id: $id) }`, map[string]any{"id": id}, &out); err != nil {
				return "", err
			}
			return "deleted bucket " + name, nil
		})
	})

	cmd := &cobra.Command{Use: "buckets [list|create|delete]", Aliases: []string{"bucket"},
		Short: "list, create and delete buckets", Long: bucketsUsage,
		ValidArgsFunction: cobra.NoFileCompletions, RunE: listRun}
	cmd.AddCommand(client(list, true), client(create, true), client(del, false))
	return client(cmd, true)
}

const bucketFields = `id name sizeBytes createdAt storage { name kind } project { name }`

func listBuckets(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[bucketRow](ctx, c, "buckets",
		`{ buckets(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node { `+bucketFields+` } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 buckets:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTORAGE\tPROJECT\tSIZE\tCREATED")
	for _, b := range rows {
		project := "-"
		if b.Project != nil {
			project = b.Project.Name
		}
		fmt.Fprintf(w, "%s\t%s (%s)\t%s\t%d bytes\t%s\n", b.Name, b.Storage.Name, strings.ToLower(b.Storage.Kind), project,
			b.SizeBytes, b.CreatedAt.Local().Format(time.DateTime))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// createBucket creates bucket name on the storage called storageName (or
// with that ID); without one, on the tenant's only storage: with several,
// which one is the user's choice, so they are listed instead.
func createBucket(ctx context.Context, c clientFlags, name, storageName, project string, asJSON bool, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "levers9 buckets create:", err)
		return exitError
	}
	type storageRow struct{ ID, Name, Kind string }
	storages, err := listRows[storageRow](ctx, c, "storages",
		`{ storages(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node { id name kind } } } }`)
	if err != nil {
		return fail(err)
	}
	var names []string
	storageID := ""
	for _, s := range storages {
		names = append(names, s.Name)
		if storageName != "" && (s.Name == storageName || s.ID == storageName) {
			storageID = s.ID
		}
	}
	sort.Strings(names)
	switch {
	case storageName != "" && storageID == "":
		return fail(fmt.Errorf("NOT_FOUND: no storage %q (storages: %s)", storageName, orDash(strings.Join(names, ", "))))
	case storageName == "" && len(storages) == 0:
		return fail(fmt.Errorf("this tenant has no storage yet: an admin adds one first (dashboard: Admin → Storages)"))
	case storageName == "" && len(storages) > 1:
		fmt.Fprintf(stderr, "levers9 buckets create: which storage? pass --storage, one of: %s\n", strings.Join(names, ", "))
		return exitUsage
	case storageName == "":
		storageID = storages[0].ID
	}
	input := map[string]any{"name": name, "storageID": storageID}
	if project != "" {
		id, err := c.idByName(ctx, "projects", "project", project)
		if err != nil {
			return fail(err)
		}
		input["projectID"] = id
	}
	var out struct{ CreateBucket bucketRow }
	if err := c.query(ctx, `mutation($in: CreateBucketInput!) { createBucket(input: $in) { `+bucketFields+` } }`,
		map[string]any{"in": input}, &out); err != nil {
		return fail(err)
	}
	if asJSON {
		return printJSON(stdout, stderr, out.CreateBucket)
	}
	b := out.CreateBucket
	fmt.Fprintf(stdout, "Created bucket %s on storage %s: levers9 cp FILE %s:KEY uploads to it.\n", b.Name, b.Storage.Name, b.Name)
	return exitOK
}

// idByName is the ID of the object called name in the connection
// (buckets, projects, nodes), as the viewer sees it; what names the
// object in the NOT_FOUND message ("bucket").
func (c clientFlags) idByName(ctx context.Context, connection, what, name string) (string, error) {
	var out map[string]struct {
		Edges []struct{ Node struct{ ID string } }
	}
	q := `query($n: String!) { ` + connection + `(first: 1, where: {name: $n}) { edges { node { id } } } }`
	if err := c.query(ctx, q, map[string]any{"n": name}, &out); err != nil {
		return "", err
	}
	if edges := out[connection].Edges; len(edges) > 0 {
		return edges[0].Node.ID, nil
	}
	return "", fmt.Errorf("NOT_FOUND: no %s %q", what, name)
}

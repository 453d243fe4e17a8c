package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const secretUsage = `usage: levers9 secret create NAME [KEY=VALUE...] [--from-dotenv FILE] [--force]
       levers9 secret list [--json]
       levers9 secret delete NAME...
KEY=- reads that value from standard input. Values are never printed.
`

// newSecretCommand is levers9 secret create|list|delete: environment
// variables kept encrypted on the server for the functions that name them.
func newSecretCommand(a *app) *cobra.Command {
	var force bool
	var dotenv string
	create := &cobra.Command{Use: "create NAME [KEY=VALUE...]",
		Short: "store a secret in the environment (KEY=- reads the value from standard input)", ValidArgsFunction: cobra.NoFileCompletions}
	create.Flags().BoolVar(&force, "force", false, "replace the values of an existing secret of that name")
	create.Flags().StringVar(&dotenv, "from-dotenv", "", "read KEY=VALUE lines from a .env file too")
	create.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 || (len(args) == 1 && dotenv == "") {
			fmt.Fprint(a.stderr, secretUsage)
			return exitUsage
		}
		values, err := secretValues(args[1:], dotenv, a.stdin)
		if err != nil {
			fmt.Fprintf(a.stderr, "levers9 secret create: %v\n", err)
			return exitUsage
		}
		return createSecret(cmd.Context(), c, args[0], values, force, a.stdout, a.stderr)
	})
	list := &cobra.Command{Use: "list", Short: "the environment's secrets and their keys (never their values)", ValidArgsFunction: cobra.NoFileCompletions}
	list.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 0 {
			fmt.Fprint(a.stderr, secretUsage)
			return exitUsage
		}
		return listSecrets(cmd.Context(), c, a.json, a.stdout, a.stderr)
	})
	del := &cobra.Command{Use: "delete NAME...", Short: "delete secrets: functions naming one fail to start containers",
		ValidArgsFunction: cobra.NoFileCompletions}
	del.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) == 0 {
			fmt.Fprint(a.stderr, secretUsage)
			return exitUsage
		}
		return eachID(args, a.stdout, a.stderr, "levers9 secret delete", func(name string) (string, error) {
			var out struct{ DeleteSecret string }
			err := c.query(cmd.Context(), `mutation($id: ID!) { deleteSecret(id: $id) }`, map[string]any{"id": name}, &out)
			return fmt.Sprintf("deleted %s (%s)", name, out.DeleteSecret), err
		})
	})
	return groupCommand(a, "secret", "secrets: environment variables for functions, encrypted on the server", secretUsage,
		client(create, false), client(list, true), client(del, false))
}

// secretValue is one KEY=VALUE, in the order given.
type secretValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// secretValues are the values of a dotenv file, then those of the
// arguments (a key given twice keeps its last value). KEY=- reads the
// value from stdin, once: one trailing newline is dropped. Errors never
// quote a value.
func secretValues(args []string, dotenv string, stdin io.Reader) ([]secretValue, error) {
	var out []secretValue
	index := map[string]int{}
	add := func(k, v string) {
		if i, ok := index[k]; ok {
			out[i].Value = v
			return
		}
		index[k] = len(out)
		out = append(out, secretValue{k, v})
	}
	if dotenv != "" {
		f, err := os.Open(dotenv)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		kvs, err := parseDotenv(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dotenv, err)
		}
		for _, kv := range kvs {
			add(kv.Key, kv.Value)
		}
	}
	readStdin := false
	for i, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			// Not quoted: without its "=", arg may be a value pasted alone.
			return nil, fmt.Errorf("value argument %d is not KEY=VALUE", i+1)
		}
		if v == "-" {
			if readStdin {
				return nil, fmt.Errorf("%s=-: only one value can come from standard input", k)
			}
			readStdin = true
			b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
			if err != nil {
				return nil, fmt.Errorf("reading %s from standard input: %w", k, err)
			}
			v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		}
		add(k, v)
	}
	return out, nil
}

// parseDotenv reads KEY=VALUE lines: blank lines and # comments skipped,
// an optional "export " before the key, values optionally in single
// quotes (as is) or double quotes (\n, \t, \", \\ escapes).
func parseDotenv(r io.Reader) ([]secretValue, error) {
	var out []secretValue
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("line %d is not KEY=VALUE", n)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("line %d (%s): a bad double-quoted value", n, k)
			}
			v = u
		default:
			// An unquoted value ends at a comment.
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out = append(out, secretValue{k, v})
	}
	return out, sc.Err()
}

type secretRow struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Keys      []string  `json:"keys"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

const secretFields = `id name keys createdAt updatedAt`

// createSecret stores secret name; it prints the keys stored, never a value.
func createSecret(ctx context.Context, c clientFlags, name string, values []secretValue, replace bool, stdout, stderr io.Writer) int {
	var out struct{ CreateSecret secretRow }
	err := c.query(ctx, `mutation($i: CreateSecretInput!) { createSecret(input: $i) { `+secretFields+` } }`,
		map[string]any{"i": map[string]any{"name": name, "values": values, "replace": replace}}, &out)
	if err != nil {
		fmt.Fprintf(stderr, "levers9 secret create %s: %v\n", name, err)
		return exitError
	}
	s := out.CreateSecret
	fmt.Fprintf(stdout, "secret %s (%s): %s\n", s.Name, s.ID, strings.Join(s.Keys, ", "))
	return exitOK
}

func listSecrets(ctx context.Context, c clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := listRows[secretRow](ctx, c, "secrets", `{ secrets(first: 1000, orderBy: {field: NAME, direction: ASC}) { edges { node { `+secretFields+` } } } }`)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 secret list:", err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKEYS\tCREATED\tUPDATED")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Name, orDash(strings.Join(r.Keys, ",")),
			r.CreatedAt.Local().Format(time.DateTime), r.UpdatedAt.Local().Format(time.DateTime))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

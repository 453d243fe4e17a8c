package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

const boxUsage = `usage: levers9 box run [--name N] [--image I | --blueprint BP] [--queue Q] [--project P]
                      [--cpu C] [--memory MiB] --port P [--port P…] -- CMD [ARG…]
Deploys app N (default box-NAME_OF_CMD) with one box running CMD, reached at
{server}/box/N/PORT/ for each port; it starts at its first request, is restarted
when it crashes while in use, and stops when idle. levers9 app stop N stops it.
`

// Placeholders a command box deploys with: the server wants a module and
// a qualname, which the runner of a command box does not import.
const (
	boxModule   = "levers9_box"
	boxQualname = "command"
)

// newBoxCommand is levers9 box run: a command with ports, deployed as a
// BOX.
func newBoxCommand(a *app) *cobra.Command {
	var f boxFlags
	run := &cobra.Command{Use: "run [--name N] [--image I | --blueprint BP] --port P… -- CMD…",
		Short: "deploy a command with ports as a box, reached at /box/NAME/PORT/", ValidArgsFunction: cobra.NoFileCompletions}
	fs := run.Flags()
	fs.StringVar(&f.name, "name", "", "the app's and the box's name (default box-NAME_OF_CMD)")
	fs.StringVar(&f.image, "image", "", "the container image (default: the queue's)")
	fs.StringVar(&f.blueprint, "blueprint", "", "a READY blueprint's ID: its image (not with --image)")
	fs.StringVar(&f.queue, "queue", "", "queue (default: the context's, else default)")
	fs.StringVar(&f.project, "project", "", "project to bill (default: the context's)")
	fs.Float64Var(&f.cpu, "cpu", 0, "CPUs (0: 1)")
	fs.IntVar(&f.memory, "memory", 0, "memory in MiB (0: 1024)")
	fs.IntSliceVar(&f.ports, "port", nil, "a port the command listens on (repeat for more)")
	run.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if msg := boxMisuse(f, cmd.ArgsLenAtDash(), args); msg != "" {
			fmt.Fprintf(a.stderr, "levers9 box run: %s\n%s", msg, boxUsage)
			return exitUsage
		}
		return runBox(cmd.Context(), c, f, args, a.stdout, a.stderr)
	})
	return groupCommand(a, "box", "long-running commands with ports (boxes)", boxUsage, client(run, false))
}

// boxMisuse says what is wrong with box run's arguments ("" if nothing):
// the command comes after "--" (a "--" inside it is its own), at least
// one --port, each a TCP port once.
func boxMisuse(f boxFlags, atDash int, args []string) string {
	switch {
	case len(args) == 0:
		return "no command after --"
	case atDash != 0:
		return "the command goes after --: levers9 box run --port 8080 -- CMD…"
	case len(f.ports) == 0:
		return "no --port: say which ports the command listens on"
	case f.image != "" && f.blueprint != "":
		return "--image and --blueprint: give one"
	}
	seen := map[int]bool{}
	for _, p := range f.ports {
		if p < 1 || p > 65535 {
			return fmt.Sprintf("--port %d is not a TCP port (1-65535)", p)
		}
		if seen[p] {
			return fmt.Sprintf("--port %d given twice", p)
		}
		seen[p] = true
	}
	return ""
}

type boxFlags struct {
	name, image, blueprint, queue, project string
	cpu                                    float64
	memory                                 int
	ports                                  []int
}

// boxName is the default name of a box running cmd: box-BASENAME, cut
// to what an app name may be.
func boxName(cmd string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(filepath.Base(cmd)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	n := strings.Trim("box-"+b.String(), "-_.")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-_.")
	}
	return n
}

func runBox(ctx context.Context, c clientFlags, f boxFlags, command []string, stdout, stderr io.Writer) int {
	name := f.name
	if name == "" {
		name = boxName(command[0])
	}
	code, err := uploadEmptyCode(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 box run:", err)
		return exitError
	}
	fn := map[string]any{
		"name": strings.ReplaceAll(strings.ReplaceAll(name, "-", "_"), ".", "_"), "deployment": name,
		"module": boxModule, "qualname": boxQualname, "kind": "BOX",
		"queue": first(f.queue, c.Queue, "default"), "ports": f.ports, "command": command,
	}
	if p := first(f.project, c.Project); p != "" {
		fn["project"] = p
	}
	if f.image != "" {
		fn["image"] = f.image
	}
	if f.blueprint != "" {
		fn["blueprint"] = f.blueprint
	}
	if f.cpu > 0 {
		fn["cpu"] = f.cpu
	}
	if f.memory > 0 {
		fn["memoryMiB"] = f.memory
	}
	if !functionName(fn["name"].(string)) {
		fn["name"] = "box"
	}
	var out struct {
		DeployApp struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Version int    `json:"version"`
		} `json:"deployApp"`
	}
	err = c.query(ctx, `mutation($input: DeployAppInput!) { deployApp(input: $input) { id name version } }`,
		map[string]any{"input": map[string]any{"name": name, "code": code, "deploy": true, "functions": []any{fn}}}, &out)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 box run:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "box %s deployed (app %s, version %d); it starts at its first request:\n", name, out.DeployApp.ID, out.DeployApp.Version)
	for _, p := range f.ports {
		fmt.Fprintf(stdout, "  %s/box/%s/%d/\n", strings.TrimRight(c.Server, "/"), name, p)
	}
	fmt.Fprintf(stdout, "stop it with: levers9 app stop %s\n", name)
	return exitOK
}

// functionName reports whether s is a Python identifier (the server's
// rule for function names).
func functionName(s string) bool {
	if s == "" || len(s) > 63 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// uploadEmptyCode uploads an empty zip as the box's code package (a
// command box imports nothing) the way the SDK uploads code, and returns
// its content address.
func uploadEmptyCode(ctx context.Context, c clientFlags) (string, error) {
	var buf bytes.Buffer
	if err := zip.NewWriter(&buf).Close(); err != nil {
		return "", err
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(buf.Bytes()))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.do(ctx, http.MethodPut, strings.TrimRight(c.Server, "/")+"/api/blobs/"+sum+"?kind=code", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return "", fmt.Errorf("uploading the code package: %w", err)
	}
	resp.Body.Close()
	return sum, nil
}

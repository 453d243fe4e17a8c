package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// clientRun runs a client command of the binary with exactly the given
// levers9 environment (nothing inherited) and stdin, and returns its
// stdout, stderr and exit code.
func clientRun(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("levers9 %v: %v", args, err)
	return "", "", -1
}

// configFile is a config file as the CLI writes it.
type configFile struct {
	Current  string `json:"current"`
	Contexts map[string]struct {
		Server, Token, Queue, Project, Environment string
	} `json:"contexts"`
}

func readConfig(t *testing.T, path string) (configFile, []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg configFile
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("config file: %v\n%s", err, raw)
	}
	return cfg, raw
}

func checkMode(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %04o, want 0600", path, fi.Mode().Perm())
	}
}

// Contexts: login with a token and with a password, context
// add/use/list/remove, -c, the environment winning over the file, and the
// file's mode kept at 0600 (refused when looser, repaired by writers).
func TestCLIContexts(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	path := filepath.Join(t.TempDir(), "levers9", "config")
	onlyFile := []string{"LEVERS9_CONFIG=" + path}

	expect := func(wantCode int, stdin string, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := clientRun(t, onlyFile, stdin, args...)
		if code != wantCode {
			t.Fatalf("levers9 %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, errOut)
		}
		return out, errOut
	}

	// Login with a token: checked, stored, current.
	out, _ := expect(0, "", "login", "--server", s.URL, "--token", c.Token, "--name", "local", "--queue", "default")
	if !strings.Contains(out, "as admin@levers9.local") || !strings.Contains(out, "Context local is current") {
		t.Fatalf("login --token printed %q", out)
	}
	checkMode(t, path)
	cfg, _ := readConfig(t, path)
	if got := cfg.Contexts["local"]; cfg.Current != "local" || got.Server != s.URL || got.Token != c.Token || got.Environment != "main" || got.Queue != "default" {
		t.Fatalf("config after login = %+v", cfg)
	}

	// Login with email and password (piped: no terminal): a new API token.
	stdin := s.URL + "\nadmin@levers9.local\n" + c.AdminPassword + "\n"
	expect(0, stdin, "login", "--name", "pw")
	cfg, _ = readConfig(t, path)
	pw := cfg.Contexts["pw"]
	if cfg.Current != "pw" || pw.Server != s.URL || !strings.HasPrefix(pw.Token, "lv9_") || pw.Token == c.Token {
		t.Fatalf("config after password login = %+v", cfg)
	}
	out, _ = expect(0, "", "token", "list")
	if !strings.Contains(out, "levers9 CLI on") {
		t.Fatalf("token list after login lacks the CLI's token:\n%s", out)
	}

	// Refusals write nothing.
	_, before := readConfig(t, path)
	_, errOut := expect(1, "", "login", "--server", s.URL, "--token", "lv9_wrong", "--name", "wrong")
	if !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Fatalf("login with a wrong token: %q", errOut)
	}
	expect(1, s.URL+"\nadmin@levers9.local\nwrong password\n", "login", "--name", "wrong")
	expect(2, "", "context", "add", "bad name", "--server", s.URL)
	expect(2, "", "context", "add", "ftp", "--server", "ftp://example.com")
	_, errOut = expect(1, "", "context", "add", "local", "--server", s.URL)
	if !strings.Contains(errOut, "exists") {
		t.Fatalf("adding an existing context: %q", errOut)
	}
	expect(2, "", "context", "use", "nope")
	if _, after := readConfig(t, path); !bytes.Equal(before, after) {
		t.Fatalf("refused commands changed the config file:\n%s\n→\n%s", before, after)
	}

	// add, use, list, -c.
	expect(0, "", "context", "add", "down", "--server", "http://127.0.0.1:1", "--token", "lv9_down")
	expect(0, "", "context", "use", "local")
	out, _ = expect(0, "", "context", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CURRENT") || !strings.Contains(out, "*        local") ||
		strings.Contains(out, c.Token) || strings.Contains(out, pw.Token) {
		t.Fatalf("context list (no secrets, current marked):\n%s", out)
	}
	out, _ = expect(0, "", "context", "list", "--json")
	var listed []struct {
		Name    string
		Current bool
		Server  string
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 3 || listed[1].Name != "local" || !listed[1].Current {
		t.Fatalf("context list --json: %v\n%s", err, out)
	}
	expect(0, "", "jobs")                    // the current context
	expect(0, "", "jobs", "-c", "pw")        // another context
	expect(0, "", "jobs", "--context", "pw") // the long form
	_, errOut = expect(1, "", "jobs", "-c", "down")
	if !strings.Contains(errOut, "reaching http://127.0.0.1:1") {
		t.Fatalf("jobs -c down: %q", errOut)
	}
	_, errOut = expect(2, "", "jobs", "-c", "nope")
	if !strings.Contains(errOut, `no context named "nope"`) {
		t.Fatalf("jobs -c nope: %q", errOut)
	}

	// The environment wins over the file, -c included.
	env := append(onlyFile, "LEVERS9_SERVER="+s.URL, "LEVERS9_TOKEN="+c.Token)
	if out, errOut, code := clientRun(t, env, "", "jobs", "-c", "down"); code != 0 {
		t.Fatalf("jobs -c down with LEVERS9_SERVER/LEVERS9_TOKEN: exit %d\n%s%s", code, out, errOut)
	}
	env = append(onlyFile, "LEVERS9_TOKEN=lv9_wrong")
	if _, errOut, code := clientRun(t, env, "", "jobs"); code != 1 || !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Fatalf("jobs with LEVERS9_TOKEN wrong: exit %d, %q", code, errOut)
	}

	// A file others may read is refused by readers, repaired by writers.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut = expect(1, "", "jobs")
	if !strings.Contains(errOut, "mode 0644") || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("jobs with a 0644 config: %q", errOut)
	}
	_, errOut = expect(0, "", "context", "remove", "down")
	if !strings.Contains(errOut, "set it to 0600") {
		t.Fatalf("context remove did not say it repaired the mode: %q", errOut)
	}
	checkMode(t, path)

	// Removing the current context leaves none current: commands then
	// need the environment or -c.
	expect(0, "", "context", "remove", "local")
	cfg, _ = readConfig(t, path)
	if _, ok := cfg.Contexts["local"]; ok || cfg.Current != "" || len(cfg.Contexts) != 1 {
		t.Fatalf("config after removals = %+v", cfg)
	}
	_, errOut = expect(1, "", "jobs")
	if !strings.Contains(errOut, "no API token: run levers9 login") {
		t.Fatalf("jobs without a current context: %q", errOut)
	}
	expect(0, "", "jobs", "-c", "pw")
	s.stop()
}

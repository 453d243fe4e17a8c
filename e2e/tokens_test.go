package e2e

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// `levers9 tokens` shows the balance and recent charges; a bad token is an
// error with exit code 1 naming the problem.
func TestTokensCommand(t *testing.T) {
	t.Parallel()
	url := dbtest.SQLiteURL(t)
	s := startServer(t, t.TempDir(), url)
	c := s.credentials()
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	gql(t, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
	var granted map[string]any
	gql(t, s.URL, c.Token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 12.5, reason: "welcome"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, &granted)

	out, code := levers9(t, "tokens", "--server", s.URL, "--token", c.Token)
	// A grant is a credit that adds to the balance, shown with its sign.
	if code != 0 || !strings.Contains(out, "Balance of admin@levers9.local: 12.500 tokens") ||
		!regexp.MustCompile(`GRANT +CREDIT +\+12\.500 +you +- +welcome`).MatchString(out) {
		t.Fatalf("levers9 tokens: exit %d\n%s", code, out)
	}
	out, code = levers9(t, "tokens", "--server", s.URL, "--token", "lv9_wrong")
	if code != 1 || !strings.Contains(out, "UNAUTHENTICATED") {
		t.Fatalf("levers9 tokens with a bad token: exit %d\n%s", code, out)
	}
	if _, code = levers9(t, "tokens", "-n", "-1", "--server", s.URL, "--token", c.Token); code != 2 {
		t.Fatalf("levers9 tokens -n -1: exit %d, want 2", code)
	}
	s.stop()
}

// levers9 runs the binary and returns its combined output and exit code.
func levers9(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// expectCLI runs a client command against s as token, wants exit code
// want, and returns the combined output.
func expectCLI(t *testing.T, s *server, token string, want int, args ...string) string {
	t.Helper()
	full := append([]string{args[0], "--server", s.URL, "--token", token}, args[1:]...)
	out, code := levers9(t, full...)
	if code != want {
		t.Fatalf("levers9 %v: exit %d, want %d\n%s", args, code, want, out)
	}
	return out
}

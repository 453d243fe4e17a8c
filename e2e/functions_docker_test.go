package e2e

import (
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// Serverless functions in real containers: the built-in node on Docker
// runs app.py's functions in the Debian python3 image (dockertest.Python;
// the levers9 package and the code are mounted by the agent). One call, a
// map of 100 in order and an exception with its traceback; then a first
// call of a function records every cold-start phase, in order, and a
// second call on the container it left warm records none of them.
func TestFunctionsDocker(t *testing.T) {
	t.Parallel()
	image := dockertest.Python(t)
	s, c := functionsServer(t, dbtest.SQLiteURL(t), "docker")
	env := fnEnv(t, s, c.Token)
	out := fnRunOK(t, env, []string{"E2E_IMAGE=" + image, "E2E_MAP_ITEMS=100", "E2E_CPU=0.25"}, "app.py", "--only", "remote,map,error,warm")
	checkApp(t, out, false)

	got := fnLines(out)
	if got["call0"] == nil || got["call1"] == nil {
		t.Fatalf("app.py printed no call IDs:\n%s", out)
	}
	cold, warm := taskPhases(t, s.URL, c.Token, got["call0"][0]), taskPhases(t, s.URL, c.Token, got["call1"][0])
	start := []string{"scheduledAt", "imageReadyAt", "codeFetchedAt", "processStartedAt", "importedAt"}
	for _, p := range append(start, "queuedAt", "startedAt", "finishedAt") {
		if cold[p] == nil {
			t.Errorf("the first call has no %s phase: %v", p, fmtPhases(cold))
		}
	}
	if !t.Failed() {
		// Every start phase comes after the call was queued and before it
		// started; the process starts before it imports the module.
		for _, p := range start {
			if cold[p].Before(*cold["queuedAt"]) || cold[p].After(*cold["startedAt"]) {
				t.Errorf("the first call's %s is outside queued…started: %v", p, fmtPhases(cold))
			}
		}
		if cold["importedAt"].Before(*cold["processStartedAt"]) || cold["finishedAt"].Before(*cold["startedAt"]) {
			t.Errorf("the first call's phases are out of order: %v", fmtPhases(cold))
		}
	}
	for _, p := range start {
		if warm[p] != nil {
			t.Errorf("the second call (warm) has a %s phase: %v", p, fmtPhases(warm))
		}
	}
	for _, p := range []string{"queuedAt", "startedAt", "finishedAt"} {
		if warm[p] == nil {
			t.Errorf("the second call has no %s phase: %v", p, fmtPhases(warm))
		}
	}
}

// taskPhases reads a task's phases through GraphQL (nil: not passed).
func taskPhases(t testing.TB, base, token, id string) map[string]*time.Time {
	t.Helper()
	var out struct {
		Node struct{ Phases map[string]*time.Time }
	}
	gql(t, base, token, `query($id: ID!) { node(id: $id) { ... on Task { phases { queuedAt scheduledAt imageReadyAt
		codeFetchedAt processStartedAt importedAt startedAt finishedAt } } } }`, map[string]any{"id": id}, &out)
	if out.Node.Phases == nil {
		t.Fatalf("task %s has no phases", id)
	}
	return out.Node.Phases
}

// phaseOrder is the order of a call's phases as the issue lists them.
var phaseOrder = []string{"queuedAt", "scheduledAt", "imageReadyAt", "codeFetchedAt", "processStartedAt",
	"importedAt", "startedAt", "finishedAt"}

// fmtPhases shows phases relative to queuedAt, for failure messages.
func fmtPhases(ph map[string]*time.Time) string {
	q := ph["queuedAt"]
	s := ""
	for _, p := range phaseOrder {
		switch {
		case ph[p] == nil:
			s += " " + p + "=-"
		case q == nil:
			s += " " + p + "=" + ph[p].Format(time.RFC3339Nano)
		default:
			s += " " + p + "=+" + ph[p].Sub(*q).String()
		}
	}
	return s
}

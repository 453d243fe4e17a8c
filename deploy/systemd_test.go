package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unit is a systemd unit file: the values of each Section.Key, in order
// (a key may repeat).
type unit map[string][]string

func parseUnit(text string) unit {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			key := section + "." + strings.TrimSpace(k)
			u[key] = append(u[key], strings.TrimSpace(v))
		}
	}
	return u
}

func (u unit) last(key string) string {
	if v := u[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// environment is the unit's Environment= assignments.
func (u unit) environment() map[string]string {
	env := map[string]string{}
	for _, line := range u["Service.Environment"] {
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(strings.Trim(kv, `"`), "=")
			env[k] = v
		}
	}
	return env
}

func readUnit(t *testing.T, name string) unit {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	return parseUnit(string(b))
}

// agentForbidden are the options the agent cannot run under, and why.
var agentForbidden = map[string]string{
	"Service.User":                  "the agent runs as root: jobs run as uids of their own",
	"Service.DynamicUser":           "the agent runs as root: jobs run as uids of their own",
	"Service.PrivateUsers":          "jobs' uids must be the host's",
	"Service.CapabilityBoundingSet": "the agent switches uids, chowns job directories and bind-mounts",
	"Service.ProtectControlGroups":  "the process runtime makes cgroups for services",
	"Service.RestrictNamespaces":    "services start in a mount namespace of their own",
	"Service.PrivateTmp":            "paths handed to dockerd must be the host's",
	"Service.PrivateDevices":        "GPUs are devices",
	"Service.DevicePolicy":          "GPUs are devices",
}

// agentUnitProblems lists what keeps a unit from running levers9 agent as
// it needs.
func agentUnitProblems(u unit, known map[string]bool) []string {
	var problems []string
	keys := make([]string, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if why, bad := agentForbidden[k]; bad {
			problems = append(problems, fmt.Sprintf("%s=%s: %s", k, u.last(k), why))
		}
	}
	if p := u.last("Service.ProtectSystem"); p == "strict" {
		problems = append(problems, "ProtectSystem=strict: the jobs' directories are under /var/lib/levers9")
	}
	if u.last("Service.Delegate") != "yes" {
		problems = append(problems, "no Delegate=yes: the process runtime makes cgroups below the agent's")
	}
	if u.last("Service.KillMode") != "mixed" {
		problems = append(problems, "KillMode is not mixed: the agent stops its services itself")
	}
	if !strings.HasSuffix(u.last("Service.ExecStart"), " agent") {
		problems = append(problems, fmt.Sprintf("ExecStart=%s: want levers9 agent", u.last("Service.ExecStart")))
	}
	env := u.environment()
	problems = append(problems, envProblems(env, known)...)
	// The process runtime's job directories default to /var/lib/levers9,
	// which must lie outside the state directory.
	state := u.last("Service.StateDirectory")
	if state == "" || state == "levers9" || env["LEVERS9_AGENT_STATE_DIR"] != "/var/lib/"+state {
		problems = append(problems, fmt.Sprintf("LEVERS9_AGENT_STATE_DIR=%s, StateDirectory=%s: want /var/lib/STATE, not /var/lib/levers9",
			env["LEVERS9_AGENT_STATE_DIR"], state))
	}
	return problems
}

// serverUnitProblems lists what is wrong with a unit for levers9 server:
// it must run unprivileged with its data in its state directory and the
// built-in node off (which would need root).
func serverUnitProblems(u unit, known map[string]bool) []string {
	var problems []string
	if u.last("Service.DynamicUser") != "yes" && (u.last("Service.User") == "" || u.last("Service.User") == "root") {
		problems = append(problems, "runs as root: set DynamicUser=yes or User=")
	}
	if !strings.HasSuffix(u.last("Service.ExecStart"), " server") {
		problems = append(problems, fmt.Sprintf("ExecStart=%s: want levers9 server", u.last("Service.ExecStart")))
	}
	env := u.environment()
	problems = append(problems, envProblems(env, known)...)
	if env["LEVERS9_LOCAL_NODE"] != "false" {
		problems = append(problems, "the built-in node is on: it needs root or the Docker socket")
	}
	if state := u.last("Service.StateDirectory"); state == "" || env["LEVERS9_DATA_DIR"] != "/var/lib/"+state {
		problems = append(problems, fmt.Sprintf("LEVERS9_DATA_DIR=%s is not the StateDirectory (%s)", env["LEVERS9_DATA_DIR"], state))
	}
	return problems
}

func envProblems(env map[string]string, known map[string]bool) []string {
	var names, problems []string
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, v := range unknownVariables(names, known) {
		problems = append(problems, "Environment: the command does not read "+v)
	}
	return problems
}

// The units run the agent and the server as each needs, with variables
// they read.
func TestSystemdUnits(t *testing.T) {
	if p := agentUnitProblems(readUnit(t, "levers9-agent.service"), agentVariables(t)); len(p) > 0 {
		t.Errorf("levers9-agent.service:\n%s", strings.Join(p, "\n"))
	}
	if p := serverUnitProblems(readUnit(t, "levers9-server.service"), serverVariables(t)); len(p) > 0 {
		t.Errorf("levers9-server.service:\n%s", strings.Join(p, "\n"))
	}
}

// systemd itself finds nothing to say about the units (unknown or
// misspelt options are only warnings to it, so any output fails), run
// with the test's binary in place of /usr/local/bin/levers9.
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd)")
	}
	bin := filepath.Join(binaries(t), "levers9")
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"levers9-agent.service", "levers9-server.service"} {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/levers9", bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The unit checks find what they are there for.
func TestUnitProblems(t *testing.T) {
	t.Parallel()
	known := map[string]bool{"LEVERS9_AGENT_STATE_DIR": true, "LEVERS9_DATA_DIR": true, "LEVERS9_LOCAL_NODE": true}
	agentOK := "[Service]\nEnvironment=LEVERS9_AGENT_STATE_DIR=/var/lib/levers9-agent\nExecStart=/usr/local/bin/levers9 agent\n" +
		"StateDirectory=levers9-agent\nDelegate=yes\nKillMode=mixed\n"
	serverOK := "[Service]\nEnvironment=LEVERS9_DATA_DIR=/var/lib/levers9-server\nEnvironment=LEVERS9_LOCAL_NODE=false\n" +
		"ExecStart=/usr/local/bin/levers9 server\nStateDirectory=levers9-server\nDynamicUser=yes\n"
	tests := []struct {
		name, text string
		check      func(unit, map[string]bool) []string
		want       []string
	}{
		{"agent", agentOK, agentUnitProblems, nil},
		{"agent PrivateTmp", agentOK + "PrivateTmp=yes\n", agentUnitProblems, []string{"PrivateTmp=yes"}},
		{"agent strict", agentOK + "ProtectSystem=strict\n", agentUnitProblems, []string{"ProtectSystem=strict"}},
		{"agent as a user", agentOK + "User=levers9\n", agentUnitProblems, []string{"Service.User=levers9"}},
		{"agent undelegated", strings.Replace(agentOK, "Delegate=yes", "Delegate=no", 1), agentUnitProblems, []string{"Delegate"}},
		{"agent state in the work base", strings.ReplaceAll(agentOK, "levers9-agent", "levers9"), agentUnitProblems, []string{"not /var/lib/levers9"}},
		{"agent unknown variable", agentOK + "Environment=LEVERS9_AGENT_STATEDIR=/x\n", agentUnitProblems, []string{"LEVERS9_AGENT_STATEDIR"}},
		{"server", serverOK, serverUnitProblems, nil},
		{"server as root", strings.Replace(serverOK, "DynamicUser=yes", "", 1), serverUnitProblems, []string{"runs as root"}},
		{"server local node", strings.Replace(serverOK, "LOCAL_NODE=false", "LOCAL_NODE=true", 1), serverUnitProblems, []string{"built-in node"}},
		{"server data elsewhere", strings.Replace(serverOK, "/var/lib/levers9-server", "/srv/levers9", 1), serverUnitProblems, []string{"StateDirectory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.check(parseUnit(tt.text), known)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

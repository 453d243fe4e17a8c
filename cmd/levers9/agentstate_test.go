package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// fakeJoinServer answers a join with a node identity and refuses that
// node's tunnel, so runAgent joins (or starts), logs how it runs the node
// and ends with the refusal.
func fakeJoinServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/join", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(wire.JoinResponse{NodeID: "node_1", Name: "gpu-01", Credential: "lv9_node"})
	})
	mux.HandleFunc("/agent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// runAgentRefused runs `levers9 agent args…` to the server's refusal and
// returns its log.
func runAgentRefused(t *testing.T, args ...string) string {
	t.Helper()
	var out strings.Builder
	if code := runAgent(context.Background(), args, &out); code != exitError || !strings.Contains(out.String(), "refused the node credential") {
		t.Fatalf("levers9 agent %s: exit %d, want %d after the server's refusal; log:\n%s", strings.Join(args, " "), code, exitError, out.String())
	}
	return out.String()
}

// agentStartLine is the log line saying how the agent runs its node.
func agentStartLine(t *testing.T, log string) string {
	t.Helper()
	for line := range strings.Lines(log) {
		if strings.Contains(line, `msg="agent starting"`) {
			return line
		}
	}
	t.Fatalf("no agent starting line in:\n%s", log)
	return ""
}

func readNodeState(t *testing.T, dir string) *agent.State {
	t.Helper()
	st, err := agent.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// jobUIDArgs are the --job-uids flag where the process runtime takes it
// (as root: not as root it runs jobs as its own user only). As root on a
// machine that cannot switch jobs to uids of their own, the process
// runtime does not start at all: the test is skipped.
func jobUIDArgs(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	const uids = "1900100000:8"
	r, err := runtime.ParseUIDRange(uids)
	if err == nil {
		err = runtime.CheckUIDs(r)
	}
	if err != nil {
		t.Skipf("the process runtime cannot run jobs as uids of their own here: %v", err)
	}
	return []string{"--job-uids", uids}
}

// A node joined with the process runtime and declared GPUs comes back,
// restarted with nothing but its state directory, as it was joined: the
// process runtime, the GPUs and every other setting of the join. It came
// back as Docker with detected (or no) GPUs.
func TestAgentRestartKeepsJoinSettings(t *testing.T) {
	srv := fakeJoinServer(t)
	dir, work := t.TempDir(), t.TempDir()
	join := append([]string{"join", "--server", srv.URL, "--invite", "lv9_inv", "--state-dir", dir,
		"--runtime", "process", "--gpu", "H100:2", "--cpus", "8", "--memory", "16GiB", "--work-dir", work,
		"--default-image", "img:1", "--job-log-quota", "2MiB", "--log-level", "debug", "--otlp-endpoint", srv.URL}, jobUIDArgs(t)...)
	runAgentRefused(t, join...)

	want := map[string]string{"runtime": "process", "default-image": "img:1", "work-dir": work,
		"job-log-quota": "2097152", "log-level": "debug", "otlp-endpoint": srv.URL}
	if os.Geteuid() == 0 {
		want["job-uids"] = "1900100000:8"
	}
	st := readNodeState(t, dir)
	wantDecl := agent.Declared{CPUs: 8, MemoryMiB: 16384, GPUs: []wire.GPU{{Type: "H100", Count: 2, Devices: []string{"0", "1"}}}}
	if !equalJSON(st.Flags, want) || !equalJSON(st.Declared, wantDecl) || st.Server != srv.URL {
		t.Fatalf("node state after the join: server %q, flags %v, declared %+v; want %q, %v, %+v", st.Server, st.Flags, st.Declared, srv.URL, want, wantDecl)
	}
	before, err := os.ReadFile(filepath.Join(dir, agent.StateFile))
	if err != nil {
		t.Fatal(err)
	}

	log := runAgentRefused(t, "--state-dir", dir)
	line := agentStartLine(t, log)
	for _, w := range []string{"runtime=process", "cpus=8", "memoryMiB=16384", "H100"} {
		if !strings.Contains(line, w) {
			t.Errorf("restarted agent runs %s; want %s", line, w)
		}
	}
	for name, v := range want {
		if !strings.Contains(log, "--"+name+"="+v) {
			t.Errorf("restarted agent does not say it uses --%s=%s:\n%s", name, v, log)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(log, "uids=1900100000-1900100007 workDir="+work) {
		t.Errorf("restarted agent's process runtime does not use the join's uids and work directory:\n%s", log)
	}
	// Nothing given: nothing to write.
	if after, err := os.ReadFile(filepath.Join(dir, agent.StateFile)); err != nil || string(after) != string(before) {
		t.Errorf("a restart with nothing given rewrote the state (%v):\n%s\nwas\n%s", err, after, before)
	}
}

// A flag given on a later start replaces the kept one, for that start and
// the next ones; the others stay as joined. A setting that stops the start
// is not kept.
func TestAgentRestartFlagOverridesAndIsKept(t *testing.T) {
	srv := fakeJoinServer(t)
	dir, work, work2 := t.TempDir(), t.TempDir(), t.TempDir()
	runAgentRefused(t, append([]string{"join", "--server", srv.URL, "--invite", "lv9_inv", "--state-dir", dir,
		"--runtime", "process", "--gpu", "H100:2", "--cpus", "8", "--memory", "16GiB", "--work-dir", work, "--default-image", "img:1"}, jobUIDArgs(t)...)...)

	// --cpus 0 declares nothing: the CPUs are detected again.
	log := runAgentRefused(t, "--state-dir", dir, "--gpu", "A100:1", "--cpus", "0", "--work-dir", work2, "--default-image", "img:2")
	if line := agentStartLine(t, log); !strings.Contains(line, "A100") || strings.Contains(line, "H100") {
		t.Errorf("agent given --gpu A100:1 --cpus 0 runs %s", line)
	}
	st := readNodeState(t, dir)
	wantDecl := agent.Declared{MemoryMiB: 16384, GPUs: []wire.GPU{{Type: "A100", Count: 1, Devices: []string{"0"}}}}
	if !equalJSON(st.Declared, wantDecl) || st.Flags["work-dir"] != work2 || st.Flags["default-image"] != "img:2" || st.Flags["runtime"] != "process" {
		t.Fatalf("node state after the restart: flags %v, declared %+v; want work-dir %s, default-image img:2, runtime process, declared %+v", st.Flags, st.Declared, work2, wantDecl)
	}

	// The next start, given nothing, runs with what the last one was given.
	log = runAgentRefused(t, "--state-dir", dir)
	if line := agentStartLine(t, log); !strings.Contains(line, "runtime=process") || !strings.Contains(line, "A100") {
		t.Errorf("the start after an override runs %s", line)
	}
	if os.Geteuid() == 0 && !strings.Contains(log, "workDir="+work2) {
		t.Errorf("the start after an override does not use work directory %s:\n%s", work2, log)
	}

	// A server moved: --server is kept too.
	srv2 := fakeJoinServer(t)
	runAgentRefused(t, "--state-dir", dir, "--server", srv2.URL+"/")
	if st := readNodeState(t, dir); st.Server != srv2.URL {
		t.Errorf("server after --server %s: %q", srv2.URL, st.Server)
	}

	// Refused job uids (bad, or any when not root) stop the start and are
	// not kept.
	before, err := os.ReadFile(filepath.Join(dir, agent.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if code := runAgent(context.Background(), []string{"--state-dir", dir, "--job-uids", "0:1"}, &out); code != exitError {
		t.Fatalf("--job-uids 0:1: exit %d, want %d; log:\n%s", code, exitError, out.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, agent.StateFile)); string(after) != string(before) {
		t.Errorf("a refused setting was kept:\n%s", after)
	}
}

// parseAgentFlags registers and parses the flags of `levers9 agent
// [join]` as runAgent does.
func parseAgentFlags(t *testing.T, join bool, args ...string) (*flag.FlagSet, *agentFlags) {
	t.Helper()
	var f agentFlags
	fs := flag.NewFlagSet("levers9 agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs, join)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs, &f
}

func noEnv(string) (string, bool) { return "", false }

// Settings kept in the state apply unless given; a given one (the runtime
// here) replaces the kept one in the state, even given as its default.
func TestKeepSettings(t *testing.T) {
	t.Parallel()
	kept := func() *agent.State {
		return &agent.State{Server: "http://a", NodeID: "node_1", Credential: "lv9_x",
			Declared: agent.Declared{GPUs: []wire.GPU{{Type: "H100", Count: 2}}},
			Flags:    map[string]string{"runtime": "process", "job-uids": "1900100000:8", "job-log-quota": "2097152", "from-a-later-version": "x"}}
	}
	tests := []struct {
		name        string
		args        []string
		wantRuntime string
		wantQuota   int64
		wantChanged bool
	}{
		{"nothing given", nil, "process", 2 << 20, false},
		{"runtime given", []string{"--runtime", "docker"}, "docker", 2 << 20, true},
		{"default given", []string{"--runtime", "auto"}, "auto", 2 << 20, true},
		{"same as kept", []string{"--runtime", "process"}, "process", 2 << 20, false},
		{"quota given", []string{"--job-log-quota", "0"}, "process", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs, f := parseAgentFlags(t, false, tc.args...)
			st := kept()
			k, err := keepSettings(fs, f, givenFlags(fs, noEnv), st)
			if err != nil {
				t.Fatal(err)
			}
			if f.runtime.Runtime != tc.wantRuntime || f.runtime.JobUIDs != "1900100000:8" || *f.logQuota != tc.wantQuota || k.changed != tc.wantChanged {
				t.Errorf("runtime %q, job uids %q, quota %d, changed %v; want %q, 1900100000:8, %d, %v",
					f.runtime.Runtime, f.runtime.JobUIDs, *f.logQuota, k.changed, tc.wantRuntime, tc.wantQuota, tc.wantChanged)
			}
			if st.Flags["runtime"] != tc.wantRuntime || len(st.Declared.GPUs) != 1 || st.Flags["from-a-later-version"] != "x" {
				t.Errorf("state after: %+v", st)
			}
			if !slices.Equal(k.unknown, []string{"from-a-later-version"}) {
				t.Errorf("unknown kept flags %v", k.unknown)
			}
		})
	}

	// A kept value that no longer parses names itself and how to replace it.
	fs, f := parseAgentFlags(t, false)
	st := kept()
	st.Flags["job-log-quota"] = "lots"
	if _, err := keepSettings(fs, f, givenFlags(fs, noEnv), st); err == nil || !strings.Contains(err.Error(), "--job-log-quota") {
		t.Errorf("bad kept quota: %v", err)
	}
}

// A variable set in the environment gives its flag as the command line
// does (settings in a unit's environment file win over kept ones); one
// set empty does not.
func TestKeepSettingsEnvironment(t *testing.T) {
	t.Setenv("LEVERS9_AGENT_DEFAULT_IMAGE", "img:env")
	t.Setenv("LEVERS9_AGENT_WORK_DIR", "")
	fs, f := parseAgentFlags(t, false)
	st := &agent.State{Flags: map[string]string{"default-image": "img:kept", "work-dir": "/kept"}}
	if _, err := keepSettings(fs, f, givenFlags(fs, os.LookupEnv), st); err != nil {
		t.Fatal(err)
	}
	if f.runtime.DefaultImage != "img:env" || st.Flags["default-image"] != "img:env" {
		t.Errorf("default image %q, kept %q; want the environment's, img:env", f.runtime.DefaultImage, st.Flags["default-image"])
	}
	if f.runtime.WorkDir != "/kept" || st.Flags["work-dir"] != "/kept" {
		t.Errorf("work dir %q, kept %q; want /kept (the variable is empty)", f.runtime.WorkDir, st.Flags["work-dir"])
	}
}

// A state file written before settings were kept starts the node as
// before: the defaults, the declared resources it has. Settings given
// are kept from then on, beside those resources.
func TestAgentOldStateFile(t *testing.T) {
	srv := fakeJoinServer(t)
	dir := t.TempDir()
	old := `{
  "server": "` + srv.URL + `",
  "nodeId": "node_1",
  "name": "gpu-01",
  "credential": "lv9_node",
  "declared": {
    "gpus": [{"type": "H100", "count": 2, "devices": ["0", "1"]}]
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, agent.StateFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}

	fs, f := parseAgentFlags(t, false)
	st := readNodeState(t, dir)
	k, err := keepSettings(fs, f, givenFlags(fs, noEnv), st)
	if err != nil {
		t.Fatal(err)
	}
	if k.changed || len(k.applied) > 0 || f.runtime.Runtime != env("LEVERS9_AGENT_RUNTIME", runtimeAuto) || f.logLevel != env("LEVERS9_LOG_LEVEL", "info") {
		t.Errorf("old state: changed %v, applied %v, runtime %q, log level %q; want the defaults", k.changed, k.applied, f.runtime.Runtime, f.logLevel)
	}

	log := runAgentRefused(t, append([]string{"--state-dir", dir, "--runtime", "process", "--work-dir", t.TempDir()}, jobUIDArgs(t)...)...)
	if line := agentStartLine(t, log); !strings.Contains(line, "runtime=process") || !strings.Contains(line, "H100") {
		t.Errorf("agent on an old state runs %s", line)
	}
	st = readNodeState(t, dir)
	if st.Flags["runtime"] != "process" || len(st.Declared.GPUs) != 1 || st.Declared.GPUs[0].Count != 2 || st.Name != "gpu-01" {
		t.Errorf("old state after a start with --runtime process: %+v", st)
	}
}

// Every flag of the agent that names its variable is in agentFlagEnv,
// so that the variable counts as giving it; every flag not kept exists.
func TestAgentFlagEnvironmentVariables(t *testing.T) {
	t.Parallel()
	fs, _ := parseAgentFlags(t, true)
	named := regexp.MustCompile(`\((LEVERS9_[A-Z0-9_]+)`)
	seen := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) {
		seen[fl.Name] = true
		m := named.FindStringSubmatch(fl.Usage)
		if m == nil {
			if v, ok := agentFlagEnv[fl.Name]; ok {
				t.Errorf("--%s: agentFlagEnv says %s, its usage names none", fl.Name, v)
			}
			return
		}
		if agentFlagEnv[fl.Name] != m[1] {
			t.Errorf("--%s: usage names %s, agentFlagEnv %q", fl.Name, m[1], agentFlagEnv[fl.Name])
		}
	})
	for name := range unkeptFlags {
		if !seen[name] {
			t.Errorf("unkeptFlags names --%s, which agent join does not have", name)
		}
	}
	for name := range agentFlagEnv {
		if !seen[name] {
			t.Errorf("agentFlagEnv names --%s, which agent join does not have", name)
		}
	}
}

func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

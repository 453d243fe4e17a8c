package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// scriptedRequest is one request a fake server got.
type scriptedRequest struct {
	Query     string
	Variables map[string]any
}

// scriptedAPI answers each request with the first answer whose key the query
// contains, and records the requests.
type scriptedAPI struct {
	t       *testing.T
	answers [][2]string
	mu      sync.Mutex
	got     []scriptedRequest
}

func (f *scriptedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req scriptedRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.got = append(f.got, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	for _, a := range f.answers {
		if strings.Contains(req.Query, a[0]) {
			fmt.Fprint(w, a[1])
			return
		}
	}
	f.t.Errorf("unexpected query %s", req.Query)
	fmt.Fprint(w, `{"errors":[{"message":"unexpected"}]}`)
}

// sent is the last request whose query contains key.
func (f *scriptedAPI) sent(key string) *scriptedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.got) - 1; i >= 0; i-- {
		if strings.Contains(f.got[i].Query, key) {
			return &f.got[i]
		}
	}
	return nil
}

func serveFake(t *testing.T, answers ...[2]string) *scriptedAPI {
	f := &scriptedAPI{t: t, answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("LEVERS9_SERVER", srv.URL)
	t.Setenv("LEVERS9_TOKEN", "lv9_x")
	return f
}

// runCLIStdin is runCLI with stdin.
func runCLIStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := newRootCommand(&app{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(t.Context())
	return exitCodeOfRun(cmd, err, &stderr), stdout.String(), stderr.String()
}

const deployedApp = `{"id":"app_1","name":"vision","state":"DEPLOYED","ephemeral":false,"version":3,"liveVersion":2,
	"createdAt":"2026-01-01T00:00:00Z","stoppedAt":null,"stopReason":"","owner":{"email":"a@x"},
	"functions":[{"name":"old","version":1},{"name":"embed","version":3},{"name":"rank","version":3}]}`

func TestAppVersions(t *testing.T) {
	f := serveFake(t,
		[2]string{"stopAppVersion", `{"data":{"stopAppVersion":` + deployedApp + `}}`},
		[2]string{"rollbackApp", `{"data":{"rollbackApp":` + deployedApp + `}}`},
		[2]string{"where: {name: $n", `{"data":{"apps":{"edges":[{"node":{"id":"app_9","state":"RUNNING"}},{"node":{"id":"app_1","state":"DEPLOYED"}}]}}}`},
		[2]string{"apps(", `{"data":{"apps":{"edges":[{"node":` + deployedApp + `}]}}}`},
		[2]string{"on App", `{"data":{"node":{"id":"app_1","state":"DEPLOYED","functions":[
			{"name":"embed","version":3,"containers":[{"jobID":"job_1"},{"jobID":null}]},
			{"name":"old","version":1,"containers":[{"jobID":"job_0"}]}]}}}`},
		[2]string{"jobLogs", `{"data":{"jobLogs":[{"attempt":1,"seq":1,"service":"runner","stream":"stdout","text":"hello"}]}}`},
		[2]string{"requeueTask", `{"data":{"requeueTask":{"id":"task_1","state":"PENDING"}}}`},
	)
	code, out, stderr := runCLI(t, "app", "list")
	if code != exitOK || !strings.Contains(out, "LIVE") || !strings.Contains(out, "v2") || !strings.Contains(out, "v3") ||
		!strings.Contains(out, "embed,rank") || strings.Contains(out, "old") {
		t.Errorf("app list: exit %d, %s %s", code, out, stderr)
	}

	// A name reaches the deployed app, not the ephemeral one of that name.
	for _, arg := range []string{"v2", "2"} {
		code, out, stderr = runCLI(t, "app", "rollback", "vision", arg)
		if r := f.sent("rollbackApp"); code != exitOK || r == nil || r.Variables["id"] != "app_1" || r.Variables["v"] != float64(2) ||
			!strings.Contains(out, "live v2") {
			t.Errorf("app rollback vision %s: exit %d, %s %s, sent %+v", arg, code, out, stderr, r)
		}
	}
	if code, _, _ := runCLI(t, "app", "rollback", "app_1"); code != exitOK || f.sent("rollbackApp").Variables["v"] != nil {
		t.Errorf("app rollback without a version: exit %d, sent %+v", code, f.sent("rollbackApp"))
	}
	if code, _, stderr := runCLI(t, "app", "rollback", "vision", "vx"); code != exitUsage {
		t.Errorf("app rollback vision vx: exit %d, %s", code, stderr)
	}

	code, out, stderr = runCLI(t, "app", "stop", "vision", "--version", "1")
	if r := f.sent("stopAppVersion"); code != exitOK || r == nil || r.Variables["v"] != float64(1) || !strings.Contains(out, "v1 stopped") {
		t.Errorf("app stop --version: exit %d, %s %s", code, out, stderr)
	}
	if code, _, _ := runCLI(t, "app", "stop", "a", "b", "--version", "1"); code != exitUsage {
		t.Errorf("app stop of two apps' version: exit %d, want 2", code)
	}

	code, out, stderr = runCLI(t, "app", "logs", "app_1", "--version", "3")
	if code != exitOK || !strings.Contains(out, "embed/v3 job_1 runner | hello") || strings.Contains(out, "job_0") {
		t.Errorf("app logs --version 3: exit %d, %q %s", code, out, stderr)
	}
	if code, out, _ = runCLI(t, "app", "logs", "app_1"); code != exitOK || !strings.Contains(out, "old/v1 job_0") {
		t.Errorf("app logs: exit %d, %q", code, out)
	}

	code, out, stderr = runCLI(t, "queue", "requeue", "task_1")
	if code != exitOK || !strings.Contains(out, "task_1 PENDING") {
		t.Errorf("queue requeue: exit %d, %s %s", code, out, stderr)
	}
}

func TestSecretCommands(t *testing.T) {
	f := serveFake(t,
		[2]string{"createSecret", `{"data":{"createSecret":{"id":"sec_1","name":"hf","keys":["A","B","HF_TOKEN"],
			"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}}}`},
		[2]string{"secrets(", `{"data":{"secrets":{"edges":[{"node":{"id":"sec_1","name":"hf","keys":["HF_TOKEN"],
			"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}}]}}}`},
		[2]string{"deleteSecret", `{"data":{"deleteSecret":"sec_1"}}`},
	)
	dotenv := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(dotenv, []byte("# comment\nexport A='single # kept'\nB=\"dq\\nline\"\nHF_TOKEN=from-file # dropped\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLIStdin(t, "from-stdin-value\n", "secret", "create", "hf", "HF_TOKEN=hf_s3cr3t", "C=-", "--from-dotenv", dotenv, "--force")
	if code != exitOK || !strings.Contains(out, "hf (sec_1): A, B, HF_TOKEN") {
		t.Fatalf("secret create: exit %d, %s %s", code, out, stderr)
	}
	for _, v := range []string{"hf_s3cr3t", "from-stdin", "single", "dq"} {
		if strings.Contains(out+stderr, v) {
			t.Errorf("secret create printed a value %q: %s %s", v, out, stderr)
		}
	}
	r := f.sent("createSecret")
	in := r.Variables["i"].(map[string]any)
	got := map[string]any{}
	for _, x := range in["values"].([]any) {
		kv := x.(map[string]any)
		got[kv["key"].(string)] = kv["value"]
	}
	want := map[string]any{"A": "single # kept", "B": "dq\nline", "HF_TOKEN": "hf_s3cr3t", "C": "from-stdin-value"}
	if fmt.Sprint(got) != fmt.Sprint(want) || in["replace"] != true || in["name"] != "hf" {
		t.Errorf("sent %+v, want values %v and replace", in, want)
	}

	for _, bad := range [][]string{{"secret", "create", "hf"}, {"secret", "create", "hf", "NOEQUALS"}, {"secret", "create", "hf", "hf_s3cr3t"},
		{"secret", "create", "hf", "A=-", "B=-"}, {"secret", "delete"}} {
		if code, _, stderr := runCLIStdin(t, "x", bad...); code != exitUsage || strings.Contains(stderr, "hf_s3cr3t") {
			t.Errorf("%v: exit %d, want 2: %s", bad, code, stderr)
		}
	}
	if code, out, _ := runCLI(t, "secret", "list"); code != exitOK || !strings.Contains(out, "hf") || !strings.Contains(out, "HF_TOKEN") {
		t.Errorf("secret list: exit %d, %s", code, out)
	}
	if code, out, _ := runCLI(t, "secret", "delete", "hf"); code != exitOK || !strings.Contains(out, "deleted hf (sec_1)") {
		t.Errorf("secret delete: exit %d, %s", code, out)
	}
}

// deploy and serve need a script; they run the SDK's command of that name.
func TestDeployAndServeUsage(t *testing.T) {
	t.Setenv("LEVERS9_SERVER", "http://127.0.0.1:1")
	t.Setenv("LEVERS9_TOKEN", "lv9_x")
	for _, name := range []string{"deploy", "serve"} {
		if code, _, stderr := runCLI(t, name); code != exitUsage || !strings.Contains(stderr, "levers9 "+name+" APP.py") {
			t.Errorf("%s without a script: exit %d, %s", name, code, stderr)
		}
		if code, _, _ := runCLI(t, name, "job.sh"); code != exitUsage {
			t.Errorf("%s job.sh: exit %d, want 2", name, code)
		}
	}
}

package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// The agent asks for a job's secrets with its credential and the job, and
// passes on what the server sends; a refusal is final and shows no value.
func TestSecretEnv(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/agent/secrets" || r.Header.Get("Authorization") != "Bearer cred" {
			http.Error(w, `{"error":{"message":"who?"}}`, http.StatusUnauthorized)
			return
		}
		switch r.Header.Get(wire.JobHeader) {
		case "job_ok":
			fmt.Fprint(w, `{"env":[{"name":"HF_TOKEN","value":"tok=en"},{"name":"EMPTY","value":""}]}`)
		case "job_bad":
			fmt.Fprint(w, `{"env":[{"name":"LEVERS9_RUNNER_SOCKET","value":"/evil"}]}`)
		case "job_junk":
			fmt.Fprint(w, `not json hunter2`)
		default:
			http.Error(w, `{"error":{"message":"secrets of job not found"}}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	a := testAgent(t, srv.URL)
	env, err := a.secretEnv(context.Background(), "job_ok")
	if err != nil || fmt.Sprint(env) != "[{HF_TOKEN tok=en} {EMPTY }]" {
		t.Fatalf("secretEnv = %v, %v", env, err)
	}
	for _, job := range []string{"job_bad", "job_junk", "job_other"} {
		before := calls.Load()
		_, err := a.secretEnv(context.Background(), job)
		if err == nil {
			t.Errorf("%s: accepted", job)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "/evil") {
			t.Errorf("%s: the error shows what the server sent: %v", job, err)
		}
		if n := calls.Load() - before; n != 1 {
			t.Errorf("%s: asked %d times; a refusal is final", job, n)
		}
	}
}

// A function container naming secrets gets their values in every
// service's system environment, before the runner's own variables (which
// win); one naming none never asks.
func TestPrepareRunnerSecrets(t *testing.T) {
	t.Parallel()
	pkg := makeZip(t, zipEntry{"app.py", 0o644, "x = 1\n"})
	hash := hashHex(pkg)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/agent/secrets" {
			asked.Add(1)
			fmt.Fprint(w, `{"env":[{"name":"HF_TOKEN","value":"tok"},{"name":"PYTHONPATH","value":"/evil"}]}`)
			return
		}
		_, _ = w.Write(pkg)
	}))
	t.Cleanup(srv.Close)
	a := testAgent(t, srv.URL)
	a.cfg.Runtime = namedRuntime{}
	for _, names := range [][]string{{"hf"}, nil} {
		m := wire.Start{JobID: "job_" + strings.Join(names, ""), Attempt: 1, Services: []wire.ServiceStart{{Name: "main"}, {Name: "side"}},
			Runner: &wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hash, Secrets: names}}
		spec := runtime.SpecFromStart(m)
		before := asked.Load()
		rj, err := a.prepareRunner(context.Background(), m, time.Now(), &spec)
		if err != nil {
			t.Fatal(err)
		}
		rj.close()
		for _, s := range spec.Services {
			vars := map[string]string{}
			for _, e := range s.SystemEnv {
				vars[e.Name] = e.Value // later wins, as in the runtime
			}
			if names != nil && (vars["HF_TOKEN"] != "tok" || vars["PYTHONPATH"] == "/evil") {
				t.Errorf("%v, service %s: %v", names, s.Name, vars)
			}
			if names == nil && vars["HF_TOKEN"] != "" {
				t.Errorf("a container naming no secret got one")
			}
		}
		if want := int32(len(names)); asked.Load()-before != want {
			t.Errorf("%v: asked %d times for secrets, want %d", names, asked.Load()-before, want)
		}
	}
}

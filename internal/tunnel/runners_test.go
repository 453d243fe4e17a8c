package tunnel_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/wire"
)

// runnerProbe is a function container's command: it asks the runner API
// twice on one connection through $LEVERS9_RUNNER_SOCKET and checks what
// the agent put into the container, failing loudly on anything missing.
const runnerProbe = `
import http.client, os, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(os.environ["LEVERS9_RUNNER_SOCKET"])
c = C("runner")
for i in range(2):
    c.request("GET", "/runner/v1/function")
    r = c.getresponse()
    body = r.read().decode()
    assert r.status == 200, (r.status, body)
    print("answer", body)
import levers9, hello
print("sdk", os.path.relpath(os.path.realpath(levers9.__file__), os.path.realpath("levers9/sdk")))
print("code", hello.GREETING)
for k in ["LEVERS9_CONTAINER_ID", "LEVERS9_FUNCTION_ID", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"]:
    print(k, os.environ[k])
`

// identity is what the test's runner API saw of a request.
type identity struct {
	Node    string `json:"node"`
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Phases  bool   `json:"phases"` // both of the agent's phases were set
}

type identityKey struct{}

// runnerWorld is a world whose server serves runners and code packages
// (in place of the blob store): pkgs by hash, counting fetches.
type runnerWorld struct {
	*world
	front   *httptest.Server
	pkgs    map[string][]byte
	fetches atomic.Int64
	refuse  sync.Map // job IDs Identify refuses
}

func newRunnerWorld(t *testing.T, dbURL string, pkgs ...[]byte) *runnerWorld {
	t.Helper()
	rw := &runnerWorld{world: newWorld(t, dbURL), pkgs: map[string][]byte{}}
	for _, p := range pkgs {
		sum := sha256.Sum256(p)
		rw.pkgs[hex.EncodeToString(sum[:])] = p
	}
	rw.srv.Runners = &tunnel.Runners{
		Identify: func(ctx context.Context, nodeID string, open wire.RunnerOpen) (context.Context, error) {
			if _, ok := rw.refuse.Load(open.JobID); ok {
				return nil, fault.New(fault.NotFound, "job %s is not a function container here", open.JobID)
			}
			return context.WithValue(ctx, identityKey{}, identity{Node: nodeID, Job: open.JobID, Attempt: open.Attempt,
				Phases: !open.CodeFetchedAt.IsZero() && !open.ImageReadyAt.IsZero()}), nil
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(r.Context().Value(identityKey{}))
		}),
	}
	back, _ := url.Parse(rw.http.URL)
	proxy := httputil.NewSingleHostReverseProxy(back)
	rw.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, ok := strings.CutPrefix(r.URL.Path, "/agent/code/")
		if !ok {
			proxy.ServeHTTP(w, r)
			return
		}
		p, found := rw.pkgs[hash]
		if !found || r.Header.Get("Authorization") == "" || r.Header.Get(wire.JobHeader) == "" {
			http.NotFound(w, r)
			return
		}
		rw.fetches.Add(1)
		_, _ = w.Write(p)
	}))
	t.Cleanup(rw.front.Close)
	return rw
}

func (rw *runnerWorld) startAgent(t *testing.T) *agent.State {
	t.Helper()
	return rw.startAgentWith(t, "n1", func(c *agent.Config) { c.Server = rw.front.URL })
}

// runFunction submits a function container's job running command and
// places it on nodeID.
func (rw *runnerWorld) runFunction(t *testing.T, nodeID string, pkg []byte, command ...string) *ent.Job {
	t.Helper()
	sum := sha256.Sum256(pkg)
	j, err := rw.jobs.Submit(rw.admin, jobspec.Job{Name: "fn", Queue: tenancy.DefaultQueue,
		Services: []jobspec.Service{{Name: "main", Command: command, CPU: 1, MemoryMiB: 64}},
		Runner:   &wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hex.EncodeToString(sum[:])}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).Exec(rw.sys); err != nil {
		t.Fatal(err)
	}
	if err := rw.bus.Publish(context.Background(), notify.TopicNode, nodeID); err != nil {
		t.Fatal(err)
	}
	return j
}

// logOf is job id's output.
func (rw *runnerWorld) logOf(t *testing.T, id string) string {
	t.Helper()
	ls, err := rw.db.Ent.LogLine.Query().Where(logline.JobID(id)).Order(ent.Asc(logline.FieldSeq)).All(rw.sys)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

func codeZip(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A function's container reaches the runner API through its agent's
// socket, identified as its job on its node, with its code and the
// levers9 package importable; two containers of one package fetch it once;
// another job gets no socket.
func TestRunnerReachesServer(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		pkg := codeZip(t, map[string]string{"hello.py": "GREETING = 'hi from the package'\n"})
		rw := newRunnerWorld(t, url, pkg)
		st := rw.startAgent(t)
		jobs := []*ent.Job{
			rw.runFunction(t, st.NodeID, pkg, "python3", "-c", runnerProbe),
			rw.runFunction(t, st.NodeID, pkg, "python3", "-c", runnerProbe),
		}
		plain := rw.runOn(t, st.NodeID, jobspec.Service{Name: "main", CPU: 1, MemoryMiB: 64, Command: []string{"python3", "-c",
			`import os, sys; sys.exit(1 if "LEVERS9_RUNNER_SOCKET" in os.environ or os.path.exists("levers9") else 0)`}})
		for _, j := range jobs {
			got := rw.waitEnded(t, j.ID)
			out := rw.logOf(t, j.ID)
			if got.Status != job.StatusComplete {
				t.Fatalf("function job %s: %s; output:\n%s", j.ID, got.Status, out)
			}
			want, _ := json.Marshal(identity{Node: st.NodeID, Job: j.ID, Attempt: 1, Phases: true})
			for _, line := range []string{
				"answer " + string(want), "sdk levers9/__init__.py", "code hi from the package",
				"LEVERS9_CONTAINER_ID ctr_1", "LEVERS9_FUNCTION_ID fn_1", "PYTHONUNBUFFERED 1", "PYTHONDONTWRITEBYTECODE 1",
			} {
				if !strings.Contains(out, line+"\n") {
					t.Errorf("function job %s: output lacks %q:\n%s", j.ID, line, out)
				}
			}
		}
		if n := rw.fetches.Load(); n != 1 {
			t.Errorf("the code package was fetched %d times for two containers; want once", n)
		}
		if got := rw.waitEnded(t, plain.ID); got.Status != job.StatusComplete {
			t.Errorf("a job that is no function's container found a runner socket: %s\n%s", got.Status, rw.logOf(t, plain.ID))
		}
	})
}

// A package the agent may not unpack fails its container with the reason;
// a container the server does not know has its connections closed.
func TestRunnerRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		evil := codeZip(t, map[string]string{"../escape.py": "x = 1\n"})
		good := codeZip(t, map[string]string{"hello.py": "GREETING = 'hi'\n"})
		rw := newRunnerWorld(t, url, evil, good)
		st := rw.startAgent(t)

		j := rw.runFunction(t, st.NodeID, evil, "true")
		got := rw.waitEnded(t, j.ID)
		svc := got.Edges.Services[0]
		if got.Status != job.StatusError || !strings.Contains(svc.StatusReason, "not a plain relative name") {
			t.Errorf("a package leaving its folder: job %s, reason %v; want ERROR saying why", got.Status, svc.StatusReason)
		}

		const connect = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["LEVERS9_RUNNER_SOCKET"])
try:
    s.sendall(b"GET /runner/v1/function HTTP/1.1\r\nHost: runner\r\n\r\n")
    got = s.recv(100)
except ConnectionError:
    got = b""  # reset or broken pipe: closed as well
sys.exit(0 if got == b"" else 1)
`
		// Refused by its job ID, known once submitted: the job is placed
		// after the refusal is set.
		j2, err := rw.jobs.Submit(rw.admin, jobspec.Job{Name: "fn", Queue: tenancy.DefaultQueue,
			Services: []jobspec.Service{{Name: "main", Command: []string{"python3", "-c", connect}, CPU: 1, MemoryMiB: 64}},
			Runner:   &wire.Runner{ContainerID: "ctr_2", FunctionID: "fn_1", CodeHash: hashOf(good)}})
		if err != nil {
			t.Fatal(err)
		}
		rw.refuse.Store(j2.ID, true)
		if err := rw.db.Ent.Service.Update().Where(service.JobID(j2.ID)).SetNodeID(st.NodeID).Exec(rw.sys); err != nil {
			t.Fatal(err)
		}
		if err := rw.bus.Publish(context.Background(), notify.TopicNode, st.NodeID); err != nil {
			t.Fatal(err)
		}
		if got := rw.waitEnded(t, j2.ID); got.Status != job.StatusComplete {
			t.Errorf("a refused container's connection was not closed: %s\n%s", got.Status, rw.logOf(t, j2.ID))
		}
	})
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

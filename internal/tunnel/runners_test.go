package tunnel_test

import (
	"archive/zip"
	"bufio"
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
	"time"

	"github.com/hashicorp/yamux"

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
print("socket", os.path.realpath(os.environ["LEVERS9_RUNNER_SOCKET"]) == os.path.realpath("levers9/run/runner.sock"))
print("pythonpath", [os.path.isabs(p) for p in os.environ["PYTHONPATH"].split(":")])
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
				"socket True", "pythonpath [True, True]", "LEVERS9_CONTAINER_ID ctr_1", "LEVERS9_FUNCTION_ID fn_1", "PYTHONUNBUFFERED 1", "PYTHONDONTWRITEBYTECODE 1",
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

// rawStreams joins a node without running its agent and opens its stream
// tunnel, as the agent would.
func (rw *runnerWorld) rawStreams(t *testing.T) (*agent.State, *yamux.Session) {
	t.Helper()
	code, _ := rw.invite(t, nil)
	st, err := agent.Join(context.Background(), agent.JoinConfig{Server: rw.http.URL, Invite: code, Name: "raw", StateDir: t.TempDir(),
		Inventory: wire.Inventory{CPUs: 1, MemoryMiB: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, rw.http.URL+"/agent/streams", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+st.Credential)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := wire.DialStreams(ctx, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := yamux.Client(c, wire.YamuxConfig(rw.log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ys.Close() })
	return st, ys
}

// openRunner opens a runner stream for job and returns it with the
// server's reply.
func openRunner(t *testing.T, ys *yamux.Session, job string) (*yamux.Stream, wire.StreamReply) {
	t.Helper()
	s, err := ys.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	_ = s.SetDeadline(time.Now().Add(hang))
	var reply wire.StreamReply
	if err := wire.WriteHeader(s, wire.RunnerOpen{JobID: job, Attempt: 1, CodeFetchedAt: time.Now(), ImageReadyAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := wire.ReadHeader(s, &reply); err != nil {
		t.Fatal(err)
	}
	return s, reply
}

// The server identifies each runner stream by its node and header, serves
// HTTP/1.1 on it with that identity, refuses what Identify refuses with
// its code, and holds at most MaxStreams of a node's at once.
func TestRunnerStreams(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		rw := newRunnerWorld(t, url)
		rw.srv.Runners.MaxStreams = 2
		rw.refuse.Store("job_refused", true)
		st, ys := rw.rawStreams(t)

		s1, reply := openRunner(t, ys, "job_a")
		if reply.Error != "" {
			t.Fatalf("reply = %+v; want OK", reply)
		}
		br := bufio.NewReader(s1)
		for range 2 { // one connection, two requests
			req, _ := http.NewRequest(http.MethodGet, "http://runner/runner/v1/function", nil)
			if err := req.Write(s1); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatal(err)
			}
			var got identity
			err = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if err != nil || got != (identity{Node: st.NodeID, Job: "job_a", Attempt: 1, Phases: true}) {
				t.Fatalf("identity = %+v, %v; want job_a on %s", got, err, st.NodeID)
			}
		}

		if s, reply := openRunner(t, ys, "job_refused"); reply.Code != string(fault.NotFound) || !strings.Contains(reply.Error, "job_refused") {
			t.Errorf("refused: reply = %+v; want NOT_FOUND naming the job", reply)
		} else {
			s.Close()
		}
		s2, reply := openRunner(t, ys, "job_b")
		if reply.Error != "" {
			t.Fatalf("second stream: reply = %+v; want OK", reply)
		}
		defer s2.Close()
		if s, reply := openRunner(t, ys, "job_c"); reply.Code != string(fault.Unavailable) || !strings.Contains(reply.Error, "limit") {
			t.Errorf("over the limit: reply = %+v; want UNAVAILABLE naming the limit", reply)
		} else {
			s.Close()
		}
		s1.Close() // frees its place once the server has closed it
		rw.waitFor(t, "a place after closing a stream", func() bool {
			s, reply := openRunner(t, ys, "job_d")
			defer s.Close()
			return reply.Error == ""
		})

	})
}

// A server without Runners refuses runner streams.
func TestRunnerStreamsWithoutRunners(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		plain := &runnerWorld{world: newWorld(t, url)}
		_, ys := plain.rawStreams(t)
		if s, reply := openRunner(t, ys, "job_a"); reply.Code != string(fault.Unavailable) {
			t.Errorf("reply = %+v; want UNAVAILABLE", reply)
		} else {
			s.Close()
		}
	})
}

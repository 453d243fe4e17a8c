package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// Blueprints built by real build jobs on the built-in node's Docker, then
// run in sandboxes:
//
//   - a changed step rebuilds only from that step: A (base, two RUN
//     steps, a COPY of a folder) is built; B, the same with the folder
//     changed, builds exactly one step; A asked for again is READY at
//     once, with no new build job; a sandbox of B sees every step's files;
//   - isolation: another tenant does not see the blueprint, cannot run
//     its image by naming it (nor can its own tenant: images under
//     levers9-bp/ are named through blueprints only), cannot exec into
//     or snapshot the sandbox.
func TestBlueprintDocker(t *testing.T) {
	t.Parallel()
	image := dockertest.Python(t)
	s, c := functionsServer(t, dbtest.SQLiteURL(t), "docker")
	var b bpRow
	var sandbox string
	t.Run("a changed step rebuilds from it", func(t *testing.T) {
		b, sandbox = checkRebuildFromChangedStep(t, s, c.Token, image)
	})
	// The sandbox runs on for the isolation checks.
	t.Cleanup(func() {
		if sandbox != "" {
			terminate(t, s.URL, c.Token, sandbox)
		}
	})
	t.Run("isolation between tenants", func(t *testing.T) {
		if sandbox == "" {
			t.Skip("no blueprint and sandbox: the build failed")
		}
		checkBlueprintIsolation(t, s, c, b, sandbox)
	})
}

// bpRow is a blueprint as GraphQL shows it.
type bpRow struct {
	ID, Key, Image, Source, State, Failure string
	BuildJobID                             string
	StepsBuilt                             int
	ExportBytes                            int64
	Steps                                  []struct{ Key, Kind, Summary string }
}

const bpFields = `id key image source state failure buildJobID stepsBuilt exportBytes steps { key kind summary }`

// buildBlueprint calls buildBlueprint with steps (BlueprintStepInput as
// maps) and optional fields of BuildBlueprintInput (queue, cpu …).
func buildBlueprint(t testing.TB, base, token string, steps []map[string]any, opts ...any) bpRow {
	t.Helper()
	in := map[string]any{"steps": steps, "cpu": 0.5, "memoryMiB": 512}
	for i := 0; i+1 < len(opts); i += 2 {
		in[opts[i].(string)] = opts[i+1]
	}
	var out struct{ BuildBlueprint bpRow }
	gql(t, base, token, `mutation($in: BuildBlueprintInput!) { buildBlueprint(input: $in) { `+bpFields+` } }`,
		map[string]any{"in": in}, &out)
	return out.BuildBlueprint
}

func blueprintByID(t testing.TB, base, token, id string) bpRow {
	t.Helper()
	var out struct{ Blueprint *bpRow }
	gql(t, base, token, `query($id: ID!) { blueprint(id: $id) { `+bpFields+` } }`, map[string]any{"id": id}, &out)
	if out.Blueprint == nil {
		t.Fatalf("blueprint %s not found", id)
	}
	return *out.Blueprint
}

// awaitBlueprint waits until blueprint id is built; the test fails (with
// the build job's log) unless it is READY. Its tenant's blueprint images
// are removed from the daemon after the test.
func awaitBlueprint(t testing.TB, base, token, id string) bpRow {
	t.Helper()
	deadline := time.Now().Add(fnTimeout)
	for {
		b := blueprintByID(t, base, token, id)
		switch {
		case b.State == "READY":
			removeBlueprintImagesAfter(t, b.Image)
			return b
		case b.State != "BUILDING":
			if b.BuildJobID != "" {
				logJob(t, base, token, b.BuildJobID)
			}
			t.Fatalf("blueprint %s: %s %q; want READY", id, b.State, b.Failure)
		case time.Now().After(deadline):
			t.Fatalf("blueprint %s still BUILDING after %v", id, fnTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeBlueprintImagesAfter removes, once the test ended, every image of
// the blueprint repository of image (a tenant's: each test server has
// its own tenants), so that runs do not pile them up in the daemon. An
// image a container still uses is only untagged.
func removeBlueprintImagesAfter(t testing.TB, image string) {
	repo, _, _ := strings.Cut(image, ":")
	if _, done := cleanedRepos.LoadOrStore(repo, true); done {
		return
	}
	dc := dockertest.Client(t)
	t.Cleanup(func() { removeRepository(t, dc, repo) })
}

// cleanedRepos are the repositories removeBlueprintImagesAfter cleans.
var cleanedRepos sync.Map

// removeRepository removes every tag of repo from the daemon and returns
// how many it removed.
func removeRepository(t testing.TB, dc *client.Client, repo string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := dc.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		t.Logf("listing images: %v", err)
		return 0
	}
	removed := 0
	for _, im := range imgs.Items {
		for _, tag := range im.RepoTags {
			if strings.HasPrefix(tag, repo+":") {
				if _, err := dc.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true}); err != nil {
					t.Logf("docker rmi %s: %v", tag, err) // in use by a container not yet removed
					continue
				}
				removed++
			}
		}
	}
	return removed
}

// codeBlob packs files (name: content) as the SDK packs a folder (a
// deterministic zip) and uploads it as a code blob; it returns its hash,
// what a COPY step names.
func codeBlob(t testing.TB, base, token string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(files[n]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	hash := hex.EncodeToString(sum[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/api/blobs/"+hash+"?kind=code", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/zip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /api/blobs/%s: %s", hash, resp.Status)
	}
	return hash
}

// jobCount is how many jobs of kind the viewer's tenant has.
func jobCount(t testing.TB, base, token, kind string) int {
	t.Helper()
	var out struct{ Jobs struct{ TotalCount int } }
	gql(t, base, token, `query($k: JobKind!) { jobs(where: {kind: $k}) { totalCount } }`, map[string]any{"k": kind}, &out)
	return out.Jobs.TotalCount
}

// waitUntil retries fn until it returns true or d passed (then fails).
func waitUntil(t testing.TB, what string, d time.Duration, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting %v for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fourSteps is the test's blueprint: the base, two RUN steps and a COPY
// of the folder uploaded as code.
func fourSteps(image, code string) []map[string]any {
	return []map[string]any{
		{"kind": "REGISTRY", "ref": image},
		{"kind": "RUN", "commands": []string{"echo one > /a"}},
		{"kind": "RUN", "commands": []string{"echo two > /b"}},
		{"kind": "COPY", "code": code, "path": "/data"},
	}
}

// checkRebuildFromChangedStep builds A and B (A with its last step's
// folder changed) and A again; it returns B and a running sandbox of B
// (the caller terminates it).
func checkRebuildFromChangedStep(t *testing.T, s *server, token, image string) (bpRow, string) {
	codeA := codeBlob(t, s.URL, token, map[string]string{"f.txt": "first\n"})
	codeB := codeBlob(t, s.URL, token, map[string]string{"f.txt": "second\n"})

	a0 := buildBlueprint(t, s.URL, token, fourSteps(image, codeA))
	if a0.State != "BUILDING" || a0.BuildJobID == "" || len(a0.Steps) != 4 || a0.Key != a0.Steps[3].Key {
		t.Fatalf("a new blueprint: %+v; want BUILDING with a build job and 4 steps, the last one's key its own", a0)
	}
	a := awaitBlueprint(t, s.URL, token, a0.ID)
	// Every step but the base is built (whether tagging the base counts
	// is the builder's choice).
	if a.StepsBuilt < 3 || a.StepsBuilt > 4 || a.ExportBytes <= 0 {
		t.Errorf("A: %d steps built, %d bytes exported; want 3 or 4 steps and an export", a.StepsBuilt, a.ExportBytes)
	}
	if !strings.HasPrefix(a.Image, "levers9-bp/") || !strings.HasSuffix(a.Image, ":"+a.Key) {
		t.Errorf("A's image %q; want levers9-bp/TENANT:%s", a.Image, a.Key)
	}

	b0 := buildBlueprint(t, s.URL, token, fourSteps(image, codeB))
	b := awaitBlueprint(t, s.URL, token, b0.ID)
	if b.ID == a.ID || b.Key == a.Key {
		t.Fatalf("B (a changed folder) is A: %+v", b)
	}
	for i := range 3 {
		if b.Steps[i].Key != a.Steps[i].Key {
			t.Errorf("step %d's key changed with the last step's folder: %s, was %s", i, b.Steps[i].Key, a.Steps[i].Key)
		}
	}
	if b.StepsBuilt != 1 {
		logJob(t, s.URL, token, b.BuildJobID)
		t.Errorf("B built %d steps; want 1 (only the changed COPY)", b.StepsBuilt)
	}

	// A again: the same blueprint, READY in the answer, no build job.
	builds := jobCount(t, s.URL, token, "BUILD")
	again := buildBlueprint(t, s.URL, token, fourSteps(image, codeA))
	if again.ID != a.ID || again.State != "READY" || again.BuildJobID != a.BuildJobID || again.StepsBuilt != a.StepsBuilt {
		t.Errorf("A asked for again: %+v; want A (%s) READY at once with its build job %s", again, a.ID, a.BuildJobID)
	}
	if n := jobCount(t, s.URL, token, "BUILD"); n != builds || n != 2 {
		t.Errorf("%d build jobs after A was asked for again, %d before; want 2 (A's and B's)", n, builds)
	}

	// A sandbox of B has every step's files.
	sb := createSandbox(t, s.URL, token, map[string]any{"blueprint": b.ID, "cpu": 0.25, "memoryMiB": 256})
	awaitSandbox(t, s.URL, token, sb)
	if out := execOK(t, s.URL, token, sb, "cat", "/a", "/b", "/data/f.txt"); out != "one\ntwo\nsecond\n" {
		t.Errorf("cat /a /b /data/f.txt in a sandbox of B: %q", out)
	}
	return b, sb
}

// checkBlueprintIsolation: tenant A's blueprint b and sandbox job sb are
// out of another tenant's reach; no one names a blueprint's image.
func checkBlueprintIsolation(t *testing.T, s *server, c credentials, b bpRow, sb string) {
	other := apiTokenOf(t, s, otherTenantAdmin(t, s, c))
	grant(t, s.URL, other)

	// Not seen.
	var got struct {
		Blueprint  *struct{ ID string }
		Node       *struct{ ID string }
		Job        *struct{ ID string }
		Blueprints struct{ TotalCount int }
	}
	body := `query($id: ID!, $job: ID!) { blueprint(id: $id) { id } node(id: $id) { id } job: node(id: $job) { id }
		blueprints(first: 10) { totalCount } }`
	if errs := gqlErrorsInto(t, s.URL, other, body, map[string]any{"id": b.ID, "job": sb}, &got); got.Blueprint != nil ||
		got.Node != nil || got.Job != nil || got.Blueprints.TotalCount != 0 || len(errs) > 0 && errCode(errs) != "NOT_FOUND" {
		t.Errorf("another tenant reads A's blueprint and sandbox: %+v, errors %+v; want nothing", got, errs)
	}
	// Its image named as a job's, a sandbox's image, or its ID as a
	// sandbox's blueprint: refused, whoever asks.
	for _, who := range []struct{ name, token string }{{"another tenant", other}, {"the owner", c.Token}} {
		errs := gqlErrors(t, s.URL, who.token, `mutation($img: String!) { submitJob(spec: {name: "steal", queue: "default",
			services: [{name: "main", image: $img, command: ["true"], cpu: 0.1, memoryMiB: 16}]}) { id } }`,
			map[string]any{"img": b.Image})
		if len(errs) == 0 || !strings.Contains(errs[0].Message, "levers9-bp/") {
			t.Errorf("%s submits a job running %s: errors %+v; want refused (images under levers9-bp/)", who.name, b.Image, errs)
		}
		errs = gqlErrors(t, s.URL, who.token, `mutation($img: String!) { createSandbox(input: {image: $img}) { id } }`,
			map[string]any{"img": b.Image})
		if len(errs) == 0 || !strings.Contains(errs[0].Message, "levers9-bp/") {
			t.Errorf("%s creates a sandbox of image %s: errors %+v; want refused (images under levers9-bp/)", who.name, b.Image, errs)
		}
	}
	if errs := gqlErrors(t, s.URL, other, `mutation($bp: ID!) { createSandbox(input: {blueprint: $bp}) { id } }`,
		map[string]any{"bp": b.ID}); len(errs) == 0 {
		t.Error("another tenant created a sandbox of A's blueprint")
	}
	if n := jobCount(t, s.URL, other, "SANDBOX"); n != 0 {
		t.Errorf("another tenant has %d sandbox jobs after its refused attempts", n)
	}

	// exec and snapshot of A's sandbox: the same 404 as a job that does
	// not exist.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := sandboxExec(ctx, s.URL, other, sb, nil, "true")
	if st := refusedStatus(err); st != http.StatusNotFound {
		t.Errorf("another tenant's exec into A's sandbox: %v; want 404", err)
	}
	d := newDeployer(t, s, other)
	d.expectStatus(t, http.MethodPost, "/streams/snapshot/"+sb+"/sandbox", other, nil, http.StatusNotFound)
	// Nothing ran in the sandbox on the stranger's behalf.
	var hist struct {
		Node struct{ Executions []struct{ Command []string } }
	}
	gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { executions { command } } } }`, map[string]any{"id": sb}, &hist)
	if n := len(hist.Node.Executions); n != 1 {
		t.Errorf("A's sandbox ran %d commands: %+v; want 1 (the owner's cat)", n, hist.Node.Executions)
	}
}

// gqlErrorsInto sends a GraphQL request that may fail and decodes what
// data came back into out.
func gqlErrorsInto(t testing.TB, base, token, query string, vars map[string]any, out any) []gqlError {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	data, errs := send(t, base+"/graphql", token, body)
	_ = json.Unmarshal(data, out)
	return errs
}

// An image built on one node runs on another: two agents on Docker join
// the server (which runs no node of its own); a queue holding only node1
// builds the blueprint; then every image of the blueprint is removed
// from the daemon and node1 is drained: a sandbox of the blueprint runs
// on node2, which fetched the export from the server and loaded it.
//
// Both agents run on this machine and share its one Docker daemon: node2
// would find the image node1 built in the daemon without fetching
// anything, which is why the test removes it first (as if node2 were
// another machine).
func TestBlueprintAcrossNodes(t *testing.T) {
	t.Parallel()
	image := dockertest.Python(t)
	busybox := dockertest.Busybox(t)
	dc := dockertest.Client(t)
	s := startServer(t, shortTempDir(t), dbtest.SQLiteURL(t), "LEVERS9_LOCAL_NODE=false")
	t.Cleanup(s.stop)
	c := s.credentials()
	grant(t, s.URL, c.Token)
	flags := []string{"--runtime", "docker", "--default-image", busybox}
	_, _, node1 := joinAgent(t, s, c.Token, "bp-node1", flags...)
	_, _, node2 := joinAgent(t, s, c.Token, "bp-node2", flags...)
	t.Cleanup(func() { removeNodeContainers(t, dc, node1); removeNodeContainers(t, dc, node2) })
	gql(t, s.URL, c.Token, `mutation($n: ID!) { createQueue(input: {name: "node1", mode: BOTH, nodeIDs: [$n]}) { id } }`,
		map[string]any{"n": node1}, new(map[string]any))

	b0 := buildBlueprint(t, s.URL, c.Token, []map[string]any{
		{"kind": "REGISTRY", "ref": image},
		{"kind": "RUN", "commands": []string{"echo built on node1 > /x"}},
	}, "queue", "node1")
	b := awaitBlueprint(t, s.URL, c.Token, b0.ID)
	if j := sandboxJob(t, s.URL, c.Token, b.BuildJobID); len(j.Services) != 1 || j.Services[0].Node == nil ||
		j.Services[0].Node.ID != node1 {
		t.Fatalf("the build job ran on %+v; want bp-node1", j.Services)
	}

	// Away from the shared daemon: every tag of the tenant's blueprint
	// repository (the step images too).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, _, _ := strings.Cut(b.Image, ":")
	removed := removeRepository(t, dc, repo)
	if _, err := dc.ImageInspect(ctx, b.Image); removed == 0 || !cerrdefs.IsNotFound(err) {
		t.Fatalf("removed %d tags of %s; the blueprint's image is still there (%v)", removed, repo, err)
	}

	var drained struct{ UpdateNode struct{ Drain bool } }
	gql(t, s.URL, c.Token, `mutation($n: ID!) { updateNode(id: $n, input: {drain: true}) { drain } }`,
		map[string]any{"n": node1}, &drained)
	sb := createSandbox(t, s.URL, c.Token, map[string]any{"blueprint": b.ID, "queue": "default", "cpu": 0.25, "memoryMiB": 256})
	t.Cleanup(func() { terminate(t, s.URL, c.Token, sb) })
	j := awaitSandbox(t, s.URL, c.Token, sb)
	if j.Services[0].Node == nil || j.Services[0].Node.ID != node2 {
		t.Errorf("the sandbox runs on %+v; want bp-node2 (bp-node1 is draining)", j.Services[0].Node)
	}
	if out := execOK(t, s.URL, c.Token, sb, "cat", "/x"); out != "built on node1\n" {
		t.Errorf("cat /x on node2: %q; want the file the build on node1 wrote", out)
	}
	if _, err := dc.ImageInspect(ctx, b.Image); err != nil {
		t.Errorf("the blueprint's image after node2 ran it: %v; want loaded from the export", err)
	}
}

// A base built from a debootstrap root file system (what the issue says
// the tests' bases are, where no registry is reachable), then a RUN step
// using its python3; a sandbox of it runs. The one debootstrap build of
// the suite (about a minute): it needs root and debootstrap.
func TestBlueprintDebootstrap(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("debootstrap builds need root: skipped")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if _, err := os.Stat("/usr/sbin/debootstrap"); err != nil {
			t.Skip("debootstrap is not installed (apt-get install debootstrap): skipped")
		}
	}
	dockertest.Busybox(t) // the daemon runs
	s, c := functionsServer(t, dbtest.SQLiteURL(t), "docker")
	mirror := dockertest.DebianMirror
	if m := os.Getenv("LEVERS9_DEBIAN_MIRROR"); m != "" {
		mirror = m
	}
	b0 := buildBlueprint(t, s.URL, c.Token, []map[string]any{
		{"kind": "DEBOOTSTRAP", "suite": "bookworm", "packages": []string{"python3"}, "mirror": mirror},
		{"kind": "RUN", "commands": []string{"python3 -c 'print(6*7)' > /answer"}},
	})
	b := awaitBlueprint(t, s.URL, c.Token, b0.ID)
	if b.StepsBuilt != 2 || b.Steps[0].Kind != "DEBOOTSTRAP" {
		t.Errorf("debootstrap blueprint: %+v; want 2 steps built, the first DEBOOTSTRAP", b)
	}
	sb := createSandbox(t, s.URL, c.Token, map[string]any{"blueprint": b.ID, "cpu": 0.25, "memoryMiB": 256})
	t.Cleanup(func() { terminate(t, s.URL, c.Token, sb) })
	awaitSandbox(t, s.URL, c.Token, sb)
	if out := execOK(t, s.URL, c.Token, sb, "cat", "/answer"); out != "42\n" {
		t.Errorf("cat /answer: %q; want 42", out)
	}
}

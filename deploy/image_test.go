package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/internal/dockertest"
)

// The image's contract, as deploy/Dockerfile sets it and the README
// documents it.
const (
	imageUser       = "65532:65532"
	imageEntrypoint = "/usr/local/bin/levers9"
	imagePort       = "8080/tcp"
	imageDataDir    = "/data"
)

// The image built from deploy/Dockerfile's last stage with binaries built
// here (BINARIES=prebuilt: no Go image, no registry) runs the server as
// its non-root user; the server turns ready on its published port, and a
// node that joins it runs a job whose output comes back: a node on this
// host, and the agent of the image itself on the host's Docker.
func TestImageServesAndRunsAJob(t *testing.T) {
	start := time.Now()
	cli := dockertest.Client(t)
	bins := binaries(t)
	t.Logf("binaries built in %v", time.Since(start).Round(100*time.Millisecond))
	for _, b := range []string{"levers9", "levers9-supervise"} {
		if err := checkStatic(filepath.Join(bins, b)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	tag := "levers9-test/image:" + randomHex(t, 6)
	buildImage(ctx, t, cli, tag, bins)
	t.Logf("image built in %v", time.Since(start).Round(100*time.Millisecond))
	checkImageConfig(ctx, t, cli, tag)

	// Joined through the published port with the static binary the image
	// holds; jobs run as child processes.
	t.Run("agent on the host", func(t *testing.T) {
		s := startImageServer(ctx, t, cli, tag, "")
		checkContainer(ctx, t, cli, s.id)
		state := filepath.Join(t.TempDir(), "agent")
		// As root, the jobs' directories go to /var/lib/levers9/jobs-HASH
		// (named after the state directory; see cmd/levers9's jobWorkDir):
		// removed after the agent (cleanups run last first).
		sum := sha256.Sum256([]byte(state))
		t.Cleanup(func() { _ = os.RemoveAll(filepath.Join("/var/lib/levers9", "jobs-"+hex.EncodeToString(sum[:6]))) })
		startAgent(t, filepath.Join(bins, "levers9"), "agent", "join", "--server", s.base,
			"--invite", s.invite("host-node"), "--state-dir", state,
			"--runtime", "process", "--cpus", "2", "--memory", "2GiB")
		s.runJob(ctx, "hello from an agent on the host")
		t.Logf("done %v after the start of the test", time.Since(start).Round(100*time.Millisecond))
	})

	// The image's agent as root with the host's Docker socket, reaching
	// the server on a network of their own: jobs run as the daemon's
	// containers. The daemon reads the paths the agent gives it on the
	// host, so the state directory is mounted at its own path.
	t.Run("agent in a container", func(t *testing.T) {
		busybox := dockertest.Busybox(t)
		net := "levers9-image-test-" + randomHex(t, 4)
		if _, err := cli.NetworkCreate(ctx, net, client.NetworkCreateOptions{Driver: "bridge"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := cli.NetworkRemove(context.Background(), net, client.NetworkRemoveOptions{}); err != nil {
				t.Errorf("removing network %s: %v", net, err)
			}
		})
		s := startImageServer(ctx, t, cli, tag, net)
		state := t.TempDir()
		startContainer(ctx, t, cli, "agent", client.ContainerCreateOptions{
			Config: &container.Config{Image: tag, User: "0", Env: []string{"LEVERS9_AGENT_STATE_DIR=" + state},
				Cmd: []string{"agent", "join", "--server", "http://" + serverAlias + ":8080", "--invite", s.invite("container-node"),
					"--runtime", "docker", "--default-image", busybox}},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(net),
				Binds: []string{"/var/run/docker.sock:/var/run/docker.sock", state + ":" + state}},
		})
		s.runJob(ctx, "hello from an agent in a container")
		t.Logf("done %v after the start of the test", time.Since(start).Round(100*time.Millisecond))
	})
}

// serverAlias is the server container's name on its network.
const serverAlias = "levers9"

// imageServer is a server container of the image with its admin token.
type imageServer struct {
	id, base string
	g        gqlClient
}

// startImageServer runs the image's server, its port published on
// 127.0.0.1 (and on network net as serverAlias, unless net is ""), waits
// until it is ready and gives its admin tokens to spend.
func startImageServer(ctx context.Context, t *testing.T, cli *client.Client, tag, net string) *imageServer {
	t.Helper()
	token := presetToken(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := network.ParsePort(imagePort)
	if err != nil {
		t.Fatal(err)
	}
	opts := client.ContainerCreateOptions{
		Config: &container.Config{Image: tag, Env: []string{"LEVERS9_ADMIN_TOKEN=" + token, "LEVERS9_PUBLIC_URL=" + base}},
		HostConfig: &container.HostConfig{PortBindings: network.PortMap{
			p: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(port)}},
		}},
	}
	if net != "" {
		opts.HostConfig.NetworkMode = container.NetworkMode(net)
		opts.NetworkingConfig = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			net: {Aliases: []string{serverAlias}},
		}}
	}
	s := &imageServer{id: startContainer(ctx, t, cli, "server", opts), base: base, g: gqlClient{t: t, base: base, token: token}}
	ready := waitReady(ctx, t, cli, s.id, base)
	t.Logf("server ready (%s)", ready)
	var me struct {
		Viewer struct{ User struct{ ID string } }
	}
	s.g.do(`{ viewer { user { id } } }`, nil, &me)
	s.g.do(`mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100000, reason: "image test"}) { id } }`,
		map[string]any{"u": me.Viewer.User.ID}, nil)
	return s
}

// invite is the code of a new node invite.
func (s *imageServer) invite(node string) string {
	var inv struct{ CreateNodeInvite struct{ Code string } }
	s.g.do(`mutation($n: String!) { createNodeInvite(nodeName: $n) { code } }`, map[string]any{"n": node}, &inv)
	return inv.CreateNodeInvite.Code
}

// runJob submits a job that echoes greeting and checks that it completes
// with greeting in its log.
func (s *imageServer) runJob(ctx context.Context, greeting string) {
	t := s.g.t
	t.Helper()
	var sub struct{ SubmitJob struct{ ID string } }
	s.g.do(`mutation($cmd: [String!]!) { submitJob(spec: {name: "image", queue: "default",
		services: [{name: "main", command: $cmd, cpu: 1, memoryMiB: 64}]}) { id } }`,
		map[string]any{"cmd": []string{"sh", "-c", "echo " + greeting}}, &sub)
	var job struct {
		Node struct{ Status, StatusReason string }
	}
	poll(ctx, t, "the job to end", func() bool {
		s.g.do(`query($id: ID!) { node(id: $id) { ... on Job { status statusReason } } }`,
			map[string]any{"id": sub.SubmitJob.ID}, &job)
		return job.Node.Status != "PENDING" && job.Node.Status != "RUNNING"
	})
	if job.Node.Status != "COMPLETE" {
		t.Fatalf("job ended %s (%s); want COMPLETE", job.Node.Status, job.Node.StatusReason)
	}
	var logs struct{ JobLogs []struct{ Text string } }
	s.g.do(`query($id: ID!) { jobLogs(jobId: $id) { text } }`, map[string]any{"id": sub.SubmitJob.ID}, &logs)
	if !slices.ContainsFunc(logs.JobLogs, func(l struct{ Text string }) bool { return strings.Contains(l.Text, greeting) }) {
		t.Fatalf("job logs %+v lack %q", logs.JobLogs, greeting)
	}
}

// checkStatic fails for a dynamically linked executable: the image has
// no C library for one to load.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it names an interpreter): build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// buildImage builds deploy/Dockerfile with BuildKit (it skips the Go
// build stage the prebuilt binaries replace; the classic builder would
// try to pull it) from a context holding only what the Dockerfile copies.
func buildImage(ctx context.Context, t *testing.T, cli *client.Client, tag, bins string) {
	t.Helper()
	buildWithBuildKit(ctx, t, cli, tag, "deploy/Dockerfile", map[string]string{
		"deploy/Dockerfile":       "Dockerfile",
		"deploy/image/passwd":     "image/passwd",
		"deploy/image/group":      "image/group",
		"bin/levers9":             filepath.Join(bins, "levers9"),
		"bin/levers9-supervise":   filepath.Join(bins, "levers9-supervise"),
		"bin/ca-certificates.crt": "/etc/ssl/certs/ca-certificates.crt",
	}, map[string]string{"BINARIES": "prebuilt"})
}

// buildWithBuildKit builds dockerfile with args from a context of files
// (path in the context → file here) and removes the image at the end of
// the test.
func buildWithBuildKit(ctx context.Context, t *testing.T, cli *client.Client, tag, dockerfile string, files, args map[string]string) {
	t.Helper()
	buildCtx, err := tarContext(files)
	if err != nil {
		t.Fatal(err)
	}
	buildArgs := map[string]*string{}
	for k, v := range args {
		buildArgs[k] = &v
	}
	res, err := cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: dockerfile, Version: build.BuilderBuildKit,
		BuildArgs: buildArgs, Remove: true, ForceRemove: true,
	})
	if err != nil {
		t.Fatalf("building %s: %v", tag, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("removing %s: %v", tag, err)
		}
		// BuildKit's cache (the context and layers, a few hundred MB) is
		// left to the daemon's own garbage collection: pruning all of it
		// here may hold up the other packages' tests sharing the daemon
		// (CI once saw one wait over 2 minutes for an image inspect).
	})
	err = dockertest.ReadBuild(res.Body)
	_ = res.Body.Close()
	if err != nil {
		t.Fatalf("building %s: %v", tag, err)
	}
}

// tarContext is a build context of the given files, executables kept so.
func tarContext(files map[string]string) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		data, err := os.ReadFile(files[name])
		if err != nil {
			return nil, fmt.Errorf("build context: %w", err)
		}
		fi, err := os.Stat(files[name])
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// checkImageConfig checks the contract of the image: its user, command,
// port, volume and environment.
func checkImageConfig(ctx context.Context, t *testing.T, cli *client.Client, tag string) {
	t.Helper()
	res, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	if c == nil {
		t.Fatal("the image has no config")
	}
	if c.User != imageUser {
		t.Errorf("User = %q, want %q (not root)", c.User, imageUser)
	}
	if !slices.Equal(c.Entrypoint, []string{imageEntrypoint}) || !slices.Equal(c.Cmd, []string{"server"}) {
		t.Errorf("Entrypoint %q Cmd %q; want [%s] [server]", c.Entrypoint, c.Cmd, imageEntrypoint)
	}
	if _, ok := c.ExposedPorts[imagePort]; !ok {
		t.Errorf("ExposedPorts = %v, want %s", c.ExposedPorts, imagePort)
	}
	if _, ok := c.Volumes[imageDataDir]; !ok {
		t.Errorf("Volumes = %v, want %s", c.Volumes, imageDataDir)
	}
	for _, want := range []string{"LEVERS9_DATA_DIR=" + imageDataDir, "LEVERS9_ADDR=0.0.0.0:8080", "LEVERS9_LOCAL_NODE=false"} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("Env = %q, want %s", c.Env, want)
		}
	}
}

// startContainer creates and starts a container (named after role) and
// removes it, with its anonymous volumes, at the end of the test, logging
// its output when the test failed.
func startContainer(ctx context.Context, t *testing.T, cli *client.Client, role string, opts client.ContainerCreateOptions) string {
	t.Helper()
	opts.Name = "levers9-image-test-" + role + "-" + randomHex(t, 4)
	created, err := cli.ContainerCreate(ctx, opts)
	if err != nil {
		t.Fatalf("creating the %s container: %v", role, err)
	}
	id := created.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if t.Failed() {
			t.Logf("%s container output:\n%s", role, containerOutput(ctx, cli, id))
		}
		if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("removing the %s container: %v", role, err)
		}
	})
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("starting the %s container: %v", role, err)
	}
	return id
}

func containerOutput(ctx context.Context, cli *client.Client, id string) string {
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		fmt.Fprintf(&out, "\n(reading the logs: %v)", err)
	}
	return out.String()
}

// waitReady polls the server until its readiness endpoint answers 200
// (with status ok and the test binary's version), failing at once when the
// container exits, and returns the endpoint. /healthz stands in while the
// server has no /readyz (404).
func waitReady(ctx context.Context, t *testing.T, cli *client.Client, id, base string) string {
	t.Helper()
	endpoint := "/readyz"
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := hc.Get(base + endpoint)
		if err == nil {
			var report struct{ Status, Version string }
			derr := json.NewDecoder(res.Body).Decode(&report)
			_ = res.Body.Close()
			switch {
			case res.StatusCode == http.StatusOK && endpoint == "/healthz":
				return endpoint
			case res.StatusCode == http.StatusOK:
				// The binary in the image answers, stamped as built.
				if derr != nil || report.Status != "ok" || report.Version != testVersion {
					t.Fatalf("/readyz: status %q version %q (%v); want ok and %s", report.Status, report.Version, derr, testVersion)
				}
				return endpoint
			case res.StatusCode == http.StatusNotFound && endpoint == "/readyz":
				endpoint = "/healthz" // until the server has /readyz
				continue
			}
		}
		st, ierr := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if ierr != nil {
			t.Fatal(ierr)
		}
		if s := st.Container.State; s != nil && !s.Running {
			t.Fatalf("the server container stopped (exit %d) before it was ready", s.ExitCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not ready within a minute (last: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkContainer checks the running server: it runs as the image's user,
// and the image holds the supervisor and CA roots but no shell (scratch).
func checkContainer(ctx context.Context, t *testing.T, cli *client.Client, id string) {
	t.Helper()
	top, err := cli.ContainerTop(ctx, id, client.ContainerTopOptions{Arguments: []string{"-o", "pid,uid,comm"}})
	if err != nil {
		t.Fatal(err)
	}
	uid := slices.Index(top.Titles, "UID")
	if uid < 0 || len(top.Processes) == 0 {
		t.Fatalf("top: titles %q, processes %q", top.Titles, top.Processes)
	}
	for _, p := range top.Processes {
		if p[uid] != strings.Split(imageUser, ":")[0] {
			t.Errorf("process %q runs as uid %s, want %s", p, p[uid], imageUser)
		}
	}
	for _, path := range []string{"/usr/local/bin/levers9-supervise", "/etc/ssl/certs/ca-certificates.crt", "/etc/passwd"} {
		if _, err := cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: path}); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if _, err := cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: "/bin/sh"}); err == nil {
		t.Error("the image has /bin/sh; its base should be empty")
	}
}

package docker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

func TestDockerServicesReachEachOtherByName(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r,
		runtime.ServiceSpec{Name: "web", Ports: []runtime.Port{{Name: "http"}},
			Command: sh(`echo "hello from web" > /www/x && echo serving && exec httpd -f -p "$LEVERS9_WEB_PORT_HTTP" -h /www`)},
		runtime.ServiceSpec{Name: "client", Command: sh(`echo "host=$LEVERS9_WEB_HOST path=$PATH"
for i in $(seq 100); do wget -qO- "http://web:$LEVERS9_WEB_PORT_HTTP/x" && exit 0; sleep 0.1; done; exit 1`)},
	)
	e := watch(t, j)
	running := e.state("web", runtime.Running)
	if len(running.Ports) != 1 || running.Ports[0].Name != "http" || running.Ports[0].Port == 0 {
		t.Fatalf("RUNNING ports = %v, want the picked http port", running.Ports)
	}
	e.line("web", "serving")
	// Published on the node's loopback at the same port.
	url := fmt.Sprintf("http://127.0.0.1:%d/x", running.Ports[0].Port)
	var body string
	for i := 0; i < 100 && body == ""; i++ {
		if res, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			body = string(b)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if body != "hello from web\n" {
		t.Errorf("GET %s from the node = %q", url, body)
	}
	e.state("client", runtime.Exited)
	j.Stop("test over", time.Second)
	j.Stop("second reason", 0)
	res := e.end()

	wantResult(t, res, runtime.Error, "test over")
	want := []string{"host=web path=/bin", "hello from web"}
	if got := e.lines("client"); !slices.Equal(got, want) {
		t.Errorf("client wrote %q, want %q (no agent environment)", got, want)
	}
	if got, want := e.states("client"), []runtime.State{runtime.Starting, runtime.Running, runtime.Exited}; !slices.Equal(got, want) {
		t.Errorf("client states %v, want %v", got, want)
	}
	if f := e.final("web"); f.State != runtime.Failed || f.Reason != "stopped: test over" {
		t.Errorf("web ended %s %q", f.State, f.Reason)
	}
	assertRemoved(t, j.ID())
}

func TestDockerImagesAndCommands(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	image := dockertest.Busybox(t)
	j := start(t, r,
		runtime.ServiceSpec{Name: "image-only", Image: image},
		runtime.ServiceSpec{Name: "command-only", Command: []string{"echo", "in the default image"}},
		runtime.ServiceSpec{Name: "args-only", Image: image, Args: []string{"echo", "args replace the image's command"}},
		runtime.ServiceSpec{Name: "command-args", Command: []string{"sh", "-c"}, Args: []string{"echo $0 $1 >&2", "one", "two"}},
	)
	e := watch(t, j)
	res := e.end()
	wantResult(t, res, runtime.Complete, "")
	for service, want := range map[string]string{
		"image-only":   dockertest.BusyboxGreeting,
		"command-only": "in the default image",
		"args-only":    "args replace the image's command",
		"command-args": "one two",
	} {
		if got := e.lines(service); !slices.Equal(got, []string{want}) {
			t.Errorf("%s wrote %q, want %q", service, got, want)
		}
		wantFinal(t, e, service, runtime.Exited, 0, "")
		if got, want := e.states(service), []runtime.State{runtime.Starting, runtime.Running, runtime.Exited}; !slices.Equal(got, want) {
			t.Errorf("%s states %v, want %v", service, got, want)
		}
	}
	for _, ev := range e.all {
		if l, ok := ev.(runtime.LogEvent); ok {
			want := runtime.Stdout
			if l.Service == "command-args" {
				want = runtime.Stderr
			}
			if l.Stream != want || l.Time.IsZero() || time.Since(l.Time) > time.Minute {
				t.Errorf("line %q: stream %s time %s", l.Text, l.Stream, l.Time)
			}
		}
	}
	assertRemoved(t, j.ID())
}

func TestDockerExitCodes(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r,
		runtime.ServiceSpec{Name: "fails", Command: sh("echo bye; exit 7")},
		runtime.ServiceSpec{Name: "sleeper", Command: []string{"sleep", "60"}},
	)
	e := watch(t, j)
	res := e.end()
	wantResult(t, res, runtime.Error, "service fails failed: exit status 7")
	wantFinal(t, e, "fails", runtime.Failed, 7, "exit status 7")
	// A failed service stops its siblings; sleep dies of SIGTERM.
	if f := e.final("sleeper"); f.State != runtime.Failed || f.Reason != "stopped: service fails failed" {
		t.Errorf("sleeper ended %s %q", f.State, f.Reason)
	}
	if got := e.lines("fails"); !slices.Equal(got, []string{"bye"}) {
		t.Errorf("fails wrote %q", got)
	}
	assertRemoved(t, j.ID())
}

func TestDockerStopWithGrace(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r,
		runtime.ServiceSpec{Name: "polite", Command: sh(`trap 'echo got TERM; exit 3' TERM; echo ready; while true; do sleep 0.1; done`)},
		runtime.ServiceSpec{Name: "stubborn", Command: sh(`trap '' TERM; echo ready; while true; do sleep 0.1; done`)},
	)
	e := watch(t, j)
	e.line("polite", "ready")
	e.line("stubborn", "ready")
	j.Stop("user asked", time.Second)
	res := e.end()
	wantResult(t, res, runtime.Error, "user asked")
	wantFinal(t, e, "polite", runtime.Failed, 3, "stopped: user asked")
	wantFinal(t, e, "stubborn", runtime.Failed, 137, "stopped: user asked") // SIGKILL after the grace
	if got := e.lines("polite"); !slices.Equal(got, []string{"ready", "got TERM"}) {
		t.Errorf("polite wrote %q", got)
	}
	assertRemoved(t, j.ID())
}

func TestDockerTimeout(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := startSpec(t, r, runtime.JobSpec{ID: randomID("job-"), Attempt: 1, Timeout: time.Second, Services: []runtime.ServiceSpec{
		{Name: "slow", Command: []string{"sleep", "60"}},
	}})
	e := watch(t, j)
	res := e.end()
	wantResult(t, res, runtime.Error, "timeout")
	if f := e.final("slow"); f.State != runtime.Failed || f.Reason != "stopped: timeout" {
		t.Errorf("slow ended %s %q", f.State, f.Reason)
	}
	assertRemoved(t, j.ID())
}

func TestDockerPullFailure(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r,
		runtime.ServiceSpec{Name: "absent", Image: "levers9-test/absent:1"},
		runtime.ServiceSpec{Name: "other", Command: []string{"sleep", "60"}},
	)
	e := watch(t, j)
	res := e.end()
	f := e.final("absent")
	if f.State != runtime.Failed || !strings.HasPrefix(f.Reason, "pulling levers9-test/absent:1: ") || len(f.Reason) < len("pulling levers9-test/absent:1: ")+5 {
		t.Errorf("absent ended %s %q, want FAILED with Docker's message", f.State, f.Reason)
	}
	wantResult(t, res, runtime.Error, "service absent failed: "+f.Reason)
	if f := e.final("other"); f.State != runtime.Failed || f.Reason != "stopped: service absent failed" {
		t.Errorf("other ended %s %q", f.State, f.Reason)
	}
	t.Logf("pull failure: %s", f.Reason)
	assertRemoved(t, j.ID())
}

func TestDockerAvailable(t *testing.T) {
	t.Parallel()
	dockertest.Client(t)
	ctx := context.Background()
	if !Available(ctx, "") {
		t.Error("Available says no daemon, but one answers")
	}
	absent := "unix://" + t.TempDir() + "/docker.sock"
	if Available(ctx, absent) {
		t.Errorf("Available(%s) = true", absent)
	}
	_, err := New(ctx, Config{NodeID: "n", DefaultImage: "x", Host: absent})
	if err == nil || !strings.Contains(err.Error(), "no Docker daemon answers") {
		t.Errorf("New with no daemon: %v", err)
	}
}

func TestDockerRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	for name, spec := range map[string]runtime.JobSpec{
		"no services":        {ID: "j1", Attempt: 1},
		"bad job ID":         {ID: "a/b", Attempt: 1, Services: []runtime.ServiceSpec{{Name: "s", Command: []string{"true"}}}},
		"nothing to run":     {ID: "j1", Attempt: 1, Services: []runtime.ServiceSpec{{Name: "s"}}},
		"duplicate services": {ID: "j1", Attempt: 1, Services: []runtime.ServiceSpec{{Name: "s", Command: []string{"true"}}, {Name: "S", Command: []string{"true"}}}},
		"relative mount":     {ID: "j1", Attempt: 1, Services: []runtime.ServiceSpec{{Name: "s", Command: []string{"true"}}}, Mounts: []runtime.Mount{{Path: "data", Dir: "/tmp"}}},
	} {
		if _, err := r.Start(context.Background(), spec); err == nil {
			t.Errorf("%s: started", name)
		}
	}
}

// Package dockertest gives tests a real Docker Engine: a client that fails
// the test when no daemon answers, a tiny busybox image built locally (there
// is no registry to pull from), and a way to start a private daemon when
// none runs (for `make test` on a fresh machine).
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// BusyboxImage is the test image: Debian's static busybox FROM scratch,
// every applet linked in /bin, a world-writable /tmp and an empty /www.
const BusyboxImage = "levers9-test/busybox:1"

// BusyboxGreeting is what BusyboxImage prints when run without a command,
// so tests can tell that the image's own command ran.
const BusyboxGreeting = "hello from levers9-test/busybox:1"

// BusyboxPath is where the static busybox is taken from (Debian's
// busybox-static package).
const BusyboxPath = "/bin/busybox"

// NewClient returns a client for the daemon named by the environment
// (DOCKER_HOST, else the default socket) that negotiates the API version.
func NewClient() (*client.Client, error) {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

// Ping reports whether the daemon behind cli answers within a few seconds.
func Ping(ctx context.Context, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err
}

// Client returns a client for the test's daemon, closed at the end of the
// test. Without a daemon the test fails: these tests are about Docker.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if err := Ping(context.Background(), cli); err != nil {
		t.Fatalf("no Docker daemon answers (%v); start one (dockerd) or run the tests through "+
			"`go run ./internal/dockertest/withdocker -- go test ...`", err)
	}
	return cli
}

var buildMu sync.Mutex

// Busybox returns BusyboxImage, building it first if the daemon lacks it.
// Several test binaries may race to build it: each build produces the same
// image under the same tag, so the last one simply wins.
func Busybox(t testing.TB) string {
	t.Helper()
	cli := Client(t)
	// Generous: tests of several packages share one daemon, and one busy
	// building or removing large images answers the others late (CI once
	// waited over 2 minutes here).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := EnsureBusybox(ctx, cli); err != nil {
		t.Fatal(err)
	}
	return BusyboxImage
}

// EnsureBusybox builds BusyboxImage unless the daemon has it.
func EnsureBusybox(ctx context.Context, cli *client.Client) error {
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := cli.ImageInspect(ctx, BusyboxImage); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspecting %s: %w", BusyboxImage, err)
	}
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return fmt.Errorf("building %s needs a static busybox (apt-get install busybox-static): %w", BusyboxImage, err)
	}
	dockerfile := `FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "sh", "-c", "/bin/busybox --install -s /bin && mkdir -p /tmp /www /etc && chmod 1777 /tmp"]
ENV PATH=/bin
CMD ["echo", "` + BusyboxGreeting + `"]
`
	buildCtx, err := tarFiles(map[string][]byte{"Dockerfile": []byte(dockerfile), "busybox": bin})
	if err != nil {
		return err
	}
	res, err := cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags: []string{BusyboxImage}, Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		return fmt.Errorf("building %s: %w", BusyboxImage, err)
	}
	defer res.Body.Close()
	if err := ReadBuild(res.Body); err != nil {
		return fmt.Errorf("building %s: %w", BusyboxImage, err)
	}
	if _, err := cli.ImageInspect(ctx, BusyboxImage); err != nil {
		return fmt.Errorf("building %s: the image is missing after the build: %w", BusyboxImage, err)
	}
	return nil
}

// ReadBuild consumes a build's progress stream and returns its error, with
// the build's output for context (BuildKit's progress comes as encoded
// trace records: then the error message is the useful part).
func ReadBuild(r io.Reader) error {
	dec := json.NewDecoder(r)
	var out bytes.Buffer
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		out.WriteString(m.Stream)
		if m.Error != nil {
			return fmt.Errorf("%s\n%s", m.Error.Message, out.String())
		}
	}
}

// tarFiles makes a tar archive of regular files.
func tarFiles(files map[string][]byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if name == "busybox" {
			hdr.Mode = 0o755
		}
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

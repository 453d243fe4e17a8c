package dockertest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/internal/dockertest"
)

// The Python image runs python3 with the standard library modules the
// levers9 runner imports (python3-minimal would lack http and more).
func TestDockertestPython(t *testing.T) {
	cli := dockertest.Client(t)
	start := time.Now()
	image := dockertest.Python(t)
	t.Logf("Python(t) took %v", time.Since(start))
	if dockertest.Python(t) != image {
		t.Fatal("a second call returned another image")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: image,
			Cmd:   []string{"python3", "-c", "import http.client, pickle, zipfile, json, sys; print(1, sys.version_info >= (3, 9))"},
		},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	var code int64
	select {
	case r := <-wait.Result:
		code = r.StatusCode
	case err := <-wait.Error:
		t.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
		t.Fatal(err)
	}
	if code != 0 || strings.TrimSpace(stdout.String()) != "1 True" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and \"1 True\"", code, stdout.String(), stderr.String())
	}
}

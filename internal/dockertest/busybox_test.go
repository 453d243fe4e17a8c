package dockertest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/levers9/levers9/internal/dockertest"
)

func TestDockertestBusybox(t *testing.T) {
	cli := dockertest.Client(t)
	image := dockertest.Busybox(t)
	if dockertest.Busybox(t) != image {
		t.Fatal("a second call returned another image")
	}
	res, err := cli.ImageInspect(context.Background(), image)
	if err != nil {
		t.Fatalf("inspecting %s: %v", image, err)
	}
	if want := []string{"echo", dockertest.BusyboxGreeting}; !slices.Equal(res.Config.Cmd, want) {
		t.Errorf("Cmd = %q, want %q", res.Config.Cmd, want)
	}
}

func TestDockertestEnsureDaemonKeepsARunningOne(t *testing.T) {
	dockertest.Client(t) // a daemon answers
	stop, err := dockertest.EnsureDaemon(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	cli, err := dockertest.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := dockertest.Ping(context.Background(), cli); err != nil {
		t.Fatalf("the daemon that was already running stopped: %v", err)
	}
}

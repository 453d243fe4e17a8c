package deploy

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/internal/dockertest"
)

// fakeGo stands in for the go command in a stand-in Go image: asked to
// make a file (-o), it writes down how it was called into it.
const fakeGo = `#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
[ -z "$out" ] && exit 0
printf 'CGO_ENABLED=%s go %s\n' "$CGO_ENABLED" "$*" > "$out"
`

// The Dockerfile's default path compiles in GO_IMAGE: both programs,
// static (CGO_ENABLED=0), version and commit stamped, and the CA roots
// copied into the image. There is no Go image here (no registry), so a
// stand-in (busybox and fakeGo) checks that plumbing; the compile itself
// is the Go toolchain's, which the other tests use.
func TestImageBuildStage(t *testing.T) {
	cli := dockertest.Client(t)
	busybox := dockertest.Busybox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goImage := "levers9-test/fake-go:" + randomHex(t, 6)
	buildWithBuildKit(ctx, t, cli, goImage, "Dockerfile", map[string]string{
		"Dockerfile": write("Dockerfile", "FROM "+busybox+"\nCOPY go /usr/local/bin/go\n"+
			"RUN mkdir -p /etc/ssl/certs && echo roots > /etc/ssl/certs/ca-certificates.crt\nENV PATH=/usr/local/bin:/bin\n", 0o644),
		"go": write("go", fakeGo, 0o755),
	}, nil)

	tag := "levers9-test/image-build:" + randomHex(t, 6)
	buildWithBuildKit(ctx, t, cli, tag, "deploy/Dockerfile", map[string]string{
		"deploy/Dockerfile":   "Dockerfile",
		"deploy/image/passwd": "image/passwd",
		"deploy/image/group":  "image/group",
		"go.mod":              "../go.mod",
		"go.sum":              "../go.sum",
	}, map[string]string{"GO_IMAGE": goImage, "VERSION": "v9.9.9", "COMMIT": "c0ffee"})

	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: tag}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	})
	tests := []struct {
		path string
		want []string
	}{
		{"/usr/local/bin/levers9", []string{"CGO_ENABLED=0 ", "-X main.version=v9.9.9", "-X main.commit=c0ffee", " ./cmd/levers9\n"}},
		{"/usr/local/bin/levers9-supervise", []string{"CGO_ENABLED=0 ", " ./cmd/levers9-supervise\n"}},
		{"/etc/ssl/certs/ca-certificates.crt", []string{"roots\n"}},
	}
	for _, tt := range tests {
		got := fileInContainer(ctx, t, cli, created.ID, tt.path)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s = %q, want it to hold %q", tt.path, got, w)
			}
		}
	}
}

// fileInContainer is the content of the file at path in a container.
func fileInContainer(ctx context.Context, t *testing.T, cli *client.Client, id, path string) string {
	t.Helper()
	res, err := cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	if _, err := tr.Next(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

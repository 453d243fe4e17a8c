package dockertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// PythonImage is the test image for serverless functions: Debian bookworm's
// minimal base with python3 (whose standard library the levers9 package
// needs: http.client, pickle, zipfile), imported from a debootstrap root
// file system. There is no registry to pull python:3.x from.
const PythonImage = "levers9-test-python:bookworm"

// DebianMirror is where debootstrap fetches packages; the environment
// variable LEVERS9_DEBIAN_MIRROR overrides it (a machine's apt sources may
// name another mirror).
const DebianMirror = "http://deb.debian.org/debian"

// pythonLock serializes builders across test binaries of one machine: a
// build takes about a minute, and two at once would only do it twice.
const pythonLock = "/tmp/levers9-test-python.lock"

// pythonBuildTimeout bounds one build (debootstrap downloads about 30 MB).
const pythonBuildTimeout = 10 * time.Minute

// Python returns PythonImage, building it first if the daemon lacks it
// (once per machine: the daemon keeps it). Building needs root and
// debootstrap (apt-get install debootstrap).
func Python(t testing.TB) string {
	t.Helper()
	cli := Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), pythonBuildTimeout+time.Minute)
	defer cancel()
	if err := EnsurePython(ctx, cli); err != nil {
		t.Fatal(err)
	}
	return PythonImage
}

// EnsurePython builds PythonImage unless the daemon has it.
func EnsurePython(ctx context.Context, cli *client.Client) error {
	buildMu.Lock()
	defer buildMu.Unlock()
	if ok, err := hasImage(ctx, cli, PythonImage); err != nil || ok {
		return err
	}
	unlock, err := lockFile(ctx, pythonLock)
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have built it while we waited for the lock.
	if ok, err := hasImage(ctx, cli, PythonImage); err != nil || ok {
		return err
	}
	return buildPython(ctx, cli)
}

func hasImage(ctx context.Context, cli *client.Client, image string) (bool, error) {
	_, err := cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("inspecting %s: %w", image, err)
}

// lockFile takes an exclusive flock on path, waiting while ctx allows.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for another build of %s (%s): %w", PythonImage, path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// buildPython runs debootstrap into a temporary directory and imports the
// tree as PythonImage.
func buildPython(ctx context.Context, cli *client.Client) (err error) {
	ctx, cancel := context.WithTimeout(ctx, pythonBuildTimeout)
	defer cancel()
	if os.Geteuid() != 0 {
		return fmt.Errorf("building %s runs debootstrap, which needs root", PythonImage)
	}
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/debootstrap"); statErr != nil {
			return fmt.Errorf("building %s needs debootstrap (apt-get install debootstrap): %w", PythonImage, err)
		}
		debootstrap = "/usr/sbin/debootstrap"
	}
	tmp, err := os.MkdirTemp("", "levers9-python-")
	if err != nil {
		return fmt.Errorf("building %s: %w", PythonImage, err)
	}
	root := filepath.Join(tmp, "root")
	defer func() {
		// debootstrap can leave proc (and more) mounted inside the tree;
		// removing through a mount would reach the host's files.
		if uerr := unmountUnder(root); uerr != nil {
			err = errors.Join(err, fmt.Errorf("leaving %s in place: %w", tmp, uerr))
			return
		}
		_ = os.RemoveAll(tmp)
	}()

	mirror := DebianMirror
	if m := os.Getenv("LEVERS9_DEBIAN_MIRROR"); m != "" {
		mirror = m
	}
	cmd := exec.CommandContext(ctx, debootstrap, "--variant=minbase", "--include=python3", "bookworm", root, mirror)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: debootstrap: %w\n%s", PythonImage, err, lastLines(string(out), 30))
	}
	if err := unmountUnder(root); err != nil {
		return fmt.Errorf("building %s: %w", PythonImage, err)
	}

	tarCmd := exec.CommandContext(ctx, "tar", "--one-file-system", "--numeric-owner",
		"--exclude=./var/cache/apt/archives/*.deb", "--exclude=./var/lib/apt/lists/*",
		"-C", root, "-c", ".")
	stdout, err := tarCmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("building %s: %w", PythonImage, err)
	}
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("building %s: tar: %w", PythonImage, err)
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: stdout, SourceName: "-"}, PythonImage,
		client.ImageImportOptions{
			Message: "debootstrap --variant=minbase --include=python3 bookworm (levers9 tests)",
			Changes: []string{
				"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"ENV LANG=C.UTF-8",
				`CMD ["python3"]`,
			},
		})
	if err != nil {
		_ = tarCmd.Process.Kill()
		_ = tarCmd.Wait()
		return fmt.Errorf("building %s: docker import: %w", PythonImage, err)
	}
	readErr := ReadBuild(res)
	_ = res.Close()
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("building %s: tar: %w: %s", PythonImage, err, tarErr.String())
	}
	if readErr != nil {
		return fmt.Errorf("building %s: docker import: %w", PythonImage, readErr)
	}
	if ok, err := hasImage(ctx, cli, PythonImage); err != nil || !ok {
		return fmt.Errorf("building %s: the image is missing after the import (%v)", PythonImage, err)
	}
	return nil
}

// unmountUnder unmounts every mount point at or below dir, deepest first,
// and fails if any remains.
func unmountUnder(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil || len(mounts) == 0 {
		return err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts))) // children before parents
	for _, m := range mounts {
		if err := syscall.Unmount(m, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	left, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("still mounted: %s", strings.Join(left, ", "))
	}
	return nil
}

// mountsUnder lists the mount points at or below dir (from
// /proc/self/mountinfo, whose fifth field is the mount point, octal-escaped).
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("listing mounts: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// unescapeMount decodes mountinfo's \NNN octal escapes (spaces and more).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// lastLines is the end of a long output, for error messages.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

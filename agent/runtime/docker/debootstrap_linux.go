package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// debootstrap builds a base image from a debootstrap root file system:
// `debootstrap --variant=minbase` into a temporary folder, then that
// folder imported as the image's one layer.
func (b *buildJob) debootstrap(ctx context.Context, s wire.BuildStep, target string) error {
	if os.Geteuid() != 0 {
		return errors.New("debootstrap needs root: this node's agent does not run as root")
	}
	bin, err := exec.LookPath("debootstrap")
	if err != nil {
		// An agent's PATH may lack the system folders.
		if _, serr := os.Stat("/usr/sbin/debootstrap"); serr != nil {
			return errors.New("debootstrap is not installed on this node (apt-get install debootstrap)")
		}
		bin = "/usr/sbin/debootstrap"
	}
	suite := s.Suite
	if suite == "" {
		suite = "bookworm"
	}
	for _, w := range append([]string{suite, s.Mirror}, s.Packages...) {
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, " \t\r\n,") {
			return fmt.Errorf("%.80q is not a suite, mirror or package name", w)
		}
	}
	dir, err := os.MkdirTemp("", "levers9-debootstrap-*")
	if err != nil {
		return err
	}
	defer func() {
		// Never remove through a mount left behind (DIR/proc).
		if err := unmountUnder(dir); err != nil {
			b.printf("leaving %s: %v", dir, err)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	args := []string{"--variant=minbase"}
	if len(s.Packages) > 0 {
		args = append(args, "--include="+strings.Join(s.Packages, ","))
	}
	args = append(args, suite, dir)
	if s.Mirror != "" {
		args = append(args, s.Mirror)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting debootstrap: %w", err)
	}
	var tail []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), runtime.MaxLineBytes)
	for sc.Scan() {
		line := strings.ToValidUTF8(sc.Text(), "\uFFFD")
		b.emitLog(runtime.Stdout, line)
		tail = append(tail, line)
		if len(tail) > 5 {
			tail = tail[1:]
		}
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("debootstrap: %w: %s", err, trimOutput(strings.Join(tail, "\n")))
	}
	if err := unmountUnder(dir); err != nil {
		return fmt.Errorf("debootstrap left mounts: %w", err)
	}
	b.printf("importing the root file system")
	tarCmd := exec.CommandContext(ctx, "tar", "--one-file-system", "--numeric-owner", "-C", dir, "-c", ".")
	pipe, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	tarCmd.Stderr = &stderr
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("starting tar: %w", err)
	}
	res, err := b.rt.cli.ImageImport(ctx, client.ImageImportSource{Source: pipe, SourceName: "-"}, target, client.ImageImportOptions{
		Changes: []string{"LABEL " + LabelBlueprint + "=" + s.Key, `CMD ["/bin/sh"]`},
	})
	if err != nil {
		_, _ = io.Copy(io.Discard, pipe)
		_ = tarCmd.Wait()
		return fmt.Errorf("importing the root file system: %w", err)
	}
	ierr := readJSONStream(res, nil)
	res.Close()
	_, _ = io.Copy(io.Discard, pipe)
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar of the root file system: %w: %s", err, trimOutput(stderr.String()))
	}
	if ierr != nil {
		return fmt.Errorf("importing the root file system: %w", ierr)
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

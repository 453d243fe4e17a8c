package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/moby/moby/api/types/jsonstream"
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
	args, err := debootstrapArgs(s, dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// Its own process group, killed whole: a child left behind (dpkg in
	// the chroot) would hold the output pipe open and write under dir.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
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
	// Imported untagged, tagged once whole: a tar cut short (a stop, a
	// failed read) may still end on a file boundary, and the daemon would
	// take it for a whole root; a step's tag is trusted as built.
	res, err := b.rt.cli.ImageImport(ctx, client.ImageImportSource{Source: pipe, SourceName: "-"}, "", client.ImageImportOptions{
		Changes: []string{"LABEL " + LabelBlueprint + "=" + s.Key, `CMD ["/bin/sh"]`},
	})
	if err != nil {
		_, _ = io.Copy(io.Discard, pipe)
		_ = tarCmd.Wait()
		return fmt.Errorf("importing the root file system: %w", err)
	}
	id, ierr := importedID(res)
	res.Close()
	_, _ = io.Copy(io.Discard, pipe)
	terr := tarCmd.Wait()
	switch {
	case ierr == nil && terr == nil && ctx.Err() == nil:
		if _, err := b.rt.cli.ImageTag(ctx, client.ImageTagOptions{Source: id, Target: target}); err != nil {
			return fmt.Errorf("tagging the root file system as %s: %w", target, err)
		}
		return nil
	case id != "":
		_, _ = b.rt.cli.ImageRemove(context.WithoutCancel(ctx), id, client.ImageRemoveOptions{PruneChildren: true})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if terr != nil {
		return fmt.Errorf("tar of the root file system: %w: %s", terr, trimOutput(stderr.String()))
	}
	return fmt.Errorf("importing the root file system: %w", ierr)
}

// importedID reads an image import's answer to its end: the new image's
// ID is the status of its last message.
func importedID(r io.Reader) (string, error) {
	dec := json.NewDecoder(r)
	id := ""
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				return id, fmt.Errorf("reading the daemon's answer: %w", err)
			}
			if id == "" {
				return "", errors.New("the daemon named no image")
			}
			return id, nil
		}
		if m.Error != nil {
			return id, errors.New(strings.TrimSpace(m.Error.Message))
		}
		if st := strings.TrimSpace(m.Status); strings.HasPrefix(st, "sha256:") {
			id = st
		}
	}
}

// Debootstrap runs as root on the host with the tenant's words: a suite
// names a script it sources (a path would run any host file), a mirror is
// fetched from (file: would read the host), packages are apt names. The
// Release files must be signed by a keyring on the node (--force-check-gpg),
// so packages, whose scripts run as root in the chroot, come from the
// distribution.
var (
	suiteRE   = regexp.MustCompile(`^[a-z][a-z0-9.-]{0,63}$`)
	packageRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]{0,127}(:[a-z0-9-]{1,32})?$`)
)

// debootstrapArgs is debootstrap's command line for step s into dir.
func debootstrapArgs(s wire.BuildStep, dir string) ([]string, error) {
	suite := s.Suite
	if suite == "" {
		suite = "bookworm"
	}
	if !suiteRE.MatchString(suite) {
		return nil, fmt.Errorf("%.80q is not a suite name", suite)
	}
	for _, p := range s.Packages {
		if !packageRE.MatchString(p) {
			return nil, fmt.Errorf("%.80q is not a package name", p)
		}
	}
	args := []string{"--variant=minbase", "--force-check-gpg"}
	if len(s.Packages) > 0 {
		args = append(args, "--include="+strings.Join(s.Packages, ","))
	}
	args = append(args, suite, dir)
	if s.Mirror != "" {
		u, err := url.Parse(s.Mirror)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			strings.ContainsAny(s.Mirror, " \t\r\n") {
			return nil, fmt.Errorf("mirror %.80q is not an http(s) URL", s.Mirror)
		}
		args = append(args, s.Mirror)
	}
	return args, nil
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

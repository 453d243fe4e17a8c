// Package dbtest runs database tests against both SQLite and a private,
// throwaway PostgreSQL cluster started from the locally installed server
// binaries.
package dbtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const installHint = "PostgreSQL server binaries not found; install them with: apt-get install -y postgresql"

// dirPrefix names cluster directories under os.TempDir so that clusters
// orphaned by a crashed test binary can be found and reaped later.
const dirPrefix = "levers9-pg-"

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	// URL connects to the "postgres" database as superuser "postgres".
	URL string

	srv  server
	once sync.Once
}

// server is where a cluster lives and who runs it.
type server struct {
	bin  string              // directory holding initdb and pg_ctl
	dir  string              // root of everything the cluster owns
	cred *syscall.Credential // nil unless we must drop root
}

// StartCluster initialises and starts a new cluster listening on a random
// port of 127.0.0.1. Call Stop to shut it down and delete its files.
func StartCluster(ctx context.Context) (*Cluster, error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	reapStale(bin, cred)

	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating cluster dir: %w", err)
	}
	c := &Cluster{srv: server{bin: bin, dir: dir, cred: cred}}
	if c.URL, err = c.srv.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Stop shuts the server down immediately and deletes its files. It is safe
// to call more than once and concurrently.
func (c *Cluster) Stop() { c.once.Do(c.srv.stop) }

// Halt stops the server as an operator's pg_ctl stop does: open
// connections end with admin_shutdown (57P01) and new ones are refused.
// Its files stay, for Resume: tests of what clients see during an outage.
func (c *Cluster) Halt(ctx context.Context) error {
	if err := c.srv.run(ctx, "pg_ctl", "stop", "-w", "-m", "fast", "-D", c.srv.data()); err != nil {
		return fmt.Errorf("halting postgres: %w", err)
	}
	return nil
}

// Resume starts a halted server again, on the same port and files.
func (c *Cluster) Resume(ctx context.Context) error {
	if err := c.srv.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.srv.data(), "-l", c.srv.log()); err != nil {
		logText, _ := os.ReadFile(c.srv.log())
		return fmt.Errorf("resuming postgres: %w\n%s", err, logText)
	}
	return nil
}

func (s *server) data() string { return filepath.Join(s.dir, "data") }
func (s *server) log() string  { return filepath.Join(s.dir, "postgres.log") }

// start initialises the cluster and starts it, returning its URL.
func (s *server) start(ctx context.Context) (string, error) {
	// The server user must be able to reach its files even when we are root,
	// and MkdirTemp creates 0700 directories.
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return "", fmt.Errorf("creating cluster dir: %w", err)
	}
	sock := filepath.Join(s.dir, "sock")
	for _, d := range []string{s.data(), sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", fmt.Errorf("creating cluster dir: %w", err)
		}
	}
	if s.cred != nil {
		for _, d := range []string{s.dir, s.data(), sock} {
			if err := os.Chown(d, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return "", fmt.Errorf("creating cluster dir: %w", err)
			}
		}
	}
	// Written after the chown so a concurrent reaper never sees a
	// half-built directory as abandoned.
	if err := os.WriteFile(filepath.Join(s.dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", fmt.Errorf("creating cluster dir: %w", err)
	}

	if err := s.run(ctx, "initdb", "-D", s.data(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		return "", fmt.Errorf("initializing postgres cluster: %w", err)
	}

	// Picking a free port and binding it later is racy, so retry a few times
	// if another process grabbed it in between.
	var err error
	for range 5 {
		var port int
		if port, err = freePort(); err != nil {
			return "", err
		}
		// Durability is pointless for a throwaway test cluster.
		conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"+
			"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 400\n", port, sock)
		if err = appendFile(filepath.Join(s.data(), "postgresql.conf"), conf); err != nil {
			return "", fmt.Errorf("configuring postgres: %w", err)
		}
		_ = os.Remove(s.log()) // so the bind check below sees only this attempt
		if err = s.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", s.data(), "-l", s.log()); err == nil {
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), nil
		}
		logText, _ := os.ReadFile(s.log())
		if !strings.Contains(string(logText), "could not bind") {
			return "", fmt.Errorf("starting postgres: %w\n%s", err, logText)
		}
	}
	return "", fmt.Errorf("starting postgres: %w", err)
}

// stop uses its own context so a cancelled caller still gets cleaned up.
func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil {
		_ = s.run(ctx, "pg_ctl", "stop", "-w", "-m", "immediate", "-D", s.data())
	}
	_ = os.RemoveAll(s.dir)
}

// reapStale stops clusters whose owning process has died without calling
// Stop, e.g. a test binary killed by a panic or timeout.
func reapStale(bin string, cred *syscall.Credential) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		(&server{bin: bin, dir: dir, cred: cred}).stop()
	}
}

// run executes a server binary as the server user, returning its output in
// the error on failure.
func (s *server) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir // the caller's cwd may be unreadable to the server user
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", name, ctx.Err())
		}
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// serverCredential returns the identity to run the server as: nil for the
// current user, or the postgres system user when we are root, because
// initdb and postgres refuse to run as root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres system user to own the test cluster: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parsing postgres uid: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parsing postgres gid: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// findBinDir locates initdb and pg_ctl: pg_config's answer first, then the
// newest Debian-style versioned directory, then PATH.
func findBinDir() (string, error) {
	var candidates []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	versioned, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	slices.SortFunc(versioned, func(a, b string) int { return cmp.Compare(version(b), version(a)) })
	candidates = append(candidates, versioned...)
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "pg_ctl")) {
			return dir, nil
		}
	}
	return "", errors.New(installHint)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	python "github.com/levers9/levers9/sdk/python"
)

// isPythonTarget reports whether levers9 run's first argument names a
// Python app (app.py, app.py::main, pkg/mod.py::fn) rather than a job's
// command.
func isPythonTarget(arg string) bool {
	return strings.HasSuffix(arg, ".py") || strings.Contains(arg, ".py::")
}

// runPython runs `python3 -m levers9 run TARGET ARGS…` with the embedded
// levers9 package on its path and the connection c in its environment,
// passes on SIGINT and SIGTERM, and returns the child's exit code (128 +
// the signal when one ended it, as shells report it).
func runPython(ctx context.Context, c clientFlags, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runPythonCommand(ctx, c, "run", args, stdin, stdout, stderr)
}

// runPythonCommand is runPython for any command of the SDK's command line
// (run, deploy, serve).
func runPythonCommand(ctx context.Context, c clientFlags, sub string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	interp, err := exec.LookPath("python3")
	if err != nil {
		fmt.Fprintf(stderr, "levers9 %s: running a Python app needs python3 on PATH: %v\n", sub, err)
		return exitError
	}
	if c.Token == "" {
		fmt.Fprintf(stderr, "levers9 %s: %s\n", sub, errNoToken)
		return exitError
	}
	dir, err := pythonPackageDir()
	if err != nil {
		fmt.Fprintf(stderr, "levers9 %s: %v\n", sub, err)
		return exitError
	}
	// Not CommandContext: the child decides how to stop on a signal (it
	// stops its app first), so it is sent the signal, not killed.
	cmd := exec.Command(interp, append([]string{"-m", "levers9", sub}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = pythonEnv(os.Environ(), dir, c)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "levers9 %s: starting python3: %v\n", sub, err)
		return exitError
	}
	// On a terminal, Ctrl-C reaches the whole foreground process group,
	// the child included: sending it again would interrupt the child's
	// own clean-up. A SIGINT sent to this process alone (kill -INT) is
	// passed on when there is no terminal.
	_, onTerminal := terminalFd(stdin)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == os.Interrupt && onTerminal {
					continue
				}
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	return childExitCode(err, stderr)
}

// childExitCode is the exit code of a finished child process.
func childExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		fmt.Fprintf(stderr, "levers9 run: %v\n", err)
		return exitError
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// pythonEnv is env with the package directory first on PYTHONPATH and the
// resolved connection as LEVERS9_SERVER and LEVERS9_TOKEN (so -c, --server
// and --token choose the Python side's server too).
func pythonEnv(env []string, pkgDir string, c clientFlags) []string {
	out := make([]string, 0, len(env)+3)
	path := pkgDir
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PYTHONPATH":
			if v != "" {
				path += string(os.PathListSeparator) + v
			}
			continue
		case "LEVERS9_SERVER", "LEVERS9_TOKEN":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PYTHONPATH="+path, "LEVERS9_SERVER="+c.Server, "LEVERS9_TOKEN="+c.Token)
}

// pythonPackageDir is a directory holding the embedded levers9 package
// (DIR/levers9/*.py): the user's cache, one directory per content, written
// once and moved into place whole so that concurrent runs never see half
// of it.
func pythonPackageDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory for the Python package: %w", err)
	}
	return extractPackage(python.Package, filepath.Join(cache, "levers9", "python"))
}

// extractPackage writes the files of pkg under root/HASH/ (HASH: of their
// names and contents) unless it is there, and returns that directory.
func extractPackage(pkg fs.FS, root string) (string, error) {
	var names []string
	err := fs.WalkDir(pkg, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("reading the embedded Python package: %w", err)
	}
	sort.Strings(names)
	h := sha256.New()
	files := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := fs.ReadFile(pkg, n)
		if err != nil {
			return "", fmt.Errorf("reading the embedded Python package: %w", err)
		}
		files[n] = b
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	dir := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:32])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("creating the Python package cache: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("creating the Python package cache: %w", err)
	}
	defer os.RemoveAll(tmp) // left only when the rename failed
	for _, n := range names {
		p := filepath.Join(tmp, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("writing the Python package: %w", err)
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return "", fmt.Errorf("writing the Python package: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("writing the Python package: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run put it there first: the same content.
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("writing the Python package: %w", err)
	}
	return dir, nil
}

// pythonRunHelp is what levers9 run's help says of Python apps.
func pythonRunHelp(name string) string {
	if name != "run" {
		return ""
	}
	return "\n\nlevers9 run app.py[::ENTRYPOINT] [ARGS...] runs a Python app instead (also pkg/mod.py::fn): its functions\n" +
		"are deployed for as long as its local entrypoint runs here, with python3 -m levers9 run (the levers9\n" +
		"package comes with this binary); ARGS go to the entrypoint (--name value as keyword arguments)."
}

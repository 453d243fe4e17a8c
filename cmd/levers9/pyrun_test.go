package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// levers9 run app.py runs python3 -m levers9 run with the embedded
// package first on PYTHONPATH and the chosen context's server and token,
// and exits with python's exit code.
func TestRunPython(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\n" +
		"echo \"args=$*\"\n" +
		"echo \"server=$LEVERS9_SERVER token=$LEVERS9_TOKEN\"\n" +
		"echo \"path=$PYTHONPATH\"\n" +
		"test -f \"${PYTHONPATH%%:*}/levers9/__main__.py\" && echo package-ok\n" +
		"exit 7\n"
	if err := os.WriteFile(filepath.Join(bin, "python3"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PYTHONPATH", "/somewhere")
	config := filepath.Join(t.TempDir(), "config")
	raw := `{"current":"other","contexts":{"prod":{"server":"http://prod.example","token":"lv9_prod"},"other":{"server":"http://other.example","token":"lv9_other"}}}`
	if err := os.WriteFile(config, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEVERS9_CONFIG", config)
	t.Setenv("LEVERS9_SERVER", "")
	t.Setenv("LEVERS9_TOKEN", "")

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-c", "prod", "run", "app.py", "--n", "3"},
			[]string{"args=-m levers9 run app.py --n 3", "server=http://prod.example token=lv9_prod", ":/somewhere", "package-ok"}},
		{[]string{"run", "pkg/mod.py::fn"},
			[]string{"args=-m levers9 run pkg/mod.py::fn", "server=http://other.example token=lv9_other"}},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 7 {
			t.Errorf("%q: exit %d (%s), want python's 7", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: output %q lacks %q", tc.args, stdout, w)
			}
		}
	}
	// Job flags mean nothing to a Python app: bad usage, nothing runs.
	if code, stdout, stderr := runCLI(t, "run", "--queue", "gpu", "app.py"); code != exitUsage || stdout != "" || !strings.Contains(stderr, "--queue") {
		t.Errorf("run --queue gpu app.py: exit %d, %q, %q; want 2 naming --queue", code, stdout, stderr)
	}
}

// The package is written once per content, whole.
func TestExtractPackage(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pkg := fstest.MapFS{"levers9/__init__.py": {Data: []byte("x = 1\n")}, "levers9/runner.py": {Data: []byte("")}}
	dir, err := extractPackage(pkg, root)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "levers9", "__init__.py")); err != nil || string(b) != "x = 1\n" {
		t.Fatalf("extracted %q, %v", b, err)
	}
	again, err := extractPackage(pkg, root)
	if err != nil || again != dir {
		t.Fatalf("second extraction: %q, %v; want %q", again, err, dir)
	}
	pkg["levers9/__init__.py"] = &fstest.MapFile{Data: []byte("x = 2\n")}
	other, err := extractPackage(pkg, root)
	if err != nil || other == dir {
		t.Fatalf("changed package: %q, %v; want a new directory", other, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Errorf("cache holds %d entries, want 2 (no temporary ones left)", len(entries))
	}
}

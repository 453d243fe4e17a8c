package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// A context is one named connection: a server, the API token used there
// and defaults for submissions. The CLI and the Python SDK read them from
// the same file, the same way (sdk/python/levers9/config.py).
type contextEntry struct {
	Server      string `json:"server"`
	Token       string `json:"token,omitempty"`
	Queue       string `json:"queue,omitempty"`
	Project     string `json:"project,omitempty"`
	Environment string `json:"environment,omitempty"`
}

// config is the file ~/.levers9/config (or $LEVERS9_CONFIG): JSON, so the
// SDK reads it with Python's standard library; mode 0600, as it holds
// tokens.
type config struct {
	Current  string                  `json:"current,omitempty"`
	Contexts map[string]contextEntry `json:"contexts"`

	path string
}

// configPath is $LEVERS9_CONFIG, else ~/.levers9/config.
func configPath() (string, error) {
	if p := os.Getenv("LEVERS9_CONFIG"); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the config file: %w (set LEVERS9_CONFIG)", err)
	}
	return filepath.Join(home, ".levers9", "config"), nil
}

// errLooseMode says a config file others may read; readers refuse it,
// writers repair it.
type errLooseMode struct {
	path string
	mode fs.FileMode
}

func (e errLooseMode) Error() string {
	return fmt.Sprintf("%s has mode %04o but holds API tokens: it must be 0600 (run chmod 600 %s, or any levers9 context or login command, which repairs it)", e.path, e.mode, e.path)
}

// loadConfig reads the config file; a missing file is an empty config. A
// file that group or others may access is refused, unless repair is set:
// then its mode is set to 0600 and a note goes to stderr.
func loadConfig(repair bool, stderr io.Writer) (*config, error) {
	p, err := configPath()
	if err != nil {
		return nil, err
	}
	c := &config{path: p, Contexts: map[string]contextEntry{}}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the config file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the config file: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		if !repair {
			return nil, errLooseMode{p, mode}
		}
		if err := f.Chmod(0o600); err != nil {
			return nil, fmt.Errorf("repairing the mode of %s: %w", p, err)
		}
		fmt.Fprintf(stderr, "levers9: %s had mode %04o; set it to 0600, as it holds API tokens\n", p, mode)
	}
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(c); err != nil {
		return nil, fmt.Errorf("%s is not a levers9 config file: %w", p, err)
	}
	if c.Contexts == nil {
		c.Contexts = map[string]contextEntry{}
	}
	return c, nil
}

// save writes the file atomically (a temporary file renamed over it), mode
// 0600 from the start, in a directory only the user may enter.
func (c *config) save() error {
	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*") // CreateTemp makes it 0600
	if err != nil {
		return fmt.Errorf("writing the config file: %w", err)
	}
	_, err = tmp.Write(append(raw, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", c.path, err)
	}
	return nil
}

// checkContextName refuses names that would be awkward on a command line.
func checkContextName(name string) error {
	if name == "" || len(name) > 64 {
		return errors.New("a context name has 1 to 64 characters")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("context name %q: no spaces or control characters", name)
		}
	}
	return nil
}

// hint shows the start of a token, enough to tell tokens apart.
func hint(token string) string {
	if len(token) <= 8 {
		return strings.Repeat("*", len(token))
	}
	return token[:8] + "…"
}

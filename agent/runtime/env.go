package runtime

import (
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// EnvKey turns a service or port name into its part of a variable name
// (wire.EnvKey: one definition for the server and every runtime).
func EnvKey(name string) string { return wire.EnvKey(name) }

// AddressVars are the variables every service of a job gets about every
// service (itself included): LEVERS9_<SERVICE>_HOST and
// LEVERS9_<SERVICE>_PORT_<NAME>. ports[i] are service i's host ports.
func AddressVars(spec JobSpec, host string, ports [][]Port) []string {
	var vars []string
	for i, s := range spec.Services {
		vars = append(vars, wire.HostVar(s.Name)+"="+host)
		for _, p := range ports[i] {
			vars = append(vars, wire.PortVar(s.Name, p.Name)+"="+strconv.Itoa(p.Port))
		}
	}
	return vars
}

// serviceEnv is the environment of one service: the agent's own (PATH,
// HOME, …) minus its LEVERS9_* settings, which may hold secrets; then the
// service's variables; then what levers9 sets, which wins.
func serviceEnv(base []string, jobID string, s ServiceSpec, dir string, addresses []string, u *jobUser) []string {
	env := newEnvList()
	for _, kv := range base {
		if !strings.HasPrefix(kv, "LEVERS9_") {
			env.set(kv)
		}
	}
	if u != nil {
		// The agent's home is not the job user's, nor are folders of its
		// PATH that others cannot enter (root's ~/.pyenv/shims would win
		// the lookup of python3 and then refuse to run).
		env.set("HOME=" + dir)
		if i, ok := env.index["PATH"]; ok {
			env.set("PATH=" + searchablePaths.of(strings.TrimPrefix(env.list[i], "PATH=")))
		}
		if u.name != "" {
			env.set("USER=" + u.name)
			env.set("LOGNAME=" + u.name)
		}
	}
	for _, e := range s.Env {
		env.set(e.Name + "=" + e.Value)
	}
	for _, e := range s.SystemEnv {
		env.set(e.Name + "=" + e.Value)
	}
	// A service sees only the GPUs it was given; none when it asked for
	// none. CUDA reads the first; NVIDIA's container tools the second, where
	// "void" means none.
	env.set("CUDA_VISIBLE_DEVICES=" + strings.Join(s.GPUs, ","))
	env.set("NVIDIA_VISIBLE_DEVICES=" + cmp.Or(strings.Join(s.GPUs, ","), "void"))
	env.set("PWD=" + dir)
	env.set("LEVERS9_JOB_ID=" + jobID)
	env.set("LEVERS9_SERVICE=" + s.Name)
	for _, kv := range addresses {
		env.set(kv)
	}
	return env.list
}

// searchablePaths remembers searchablePath of the last PATH (the agent's,
// for every service it starts) for a minute: each start would stat every
// folder of it and each one above, whose modes seldom change.
var searchablePaths pathCache

type pathCache struct {
	mu         sync.Mutex
	path, kept string
	at         time.Time
}

func (c *pathCache) of(path string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path != c.path || time.Since(c.at) > time.Minute {
		c.path, c.kept, c.at = path, searchablePath(path), time.Now()
	}
	return c.kept
}

// searchablePath keeps the folders of a PATH that anyone may search: the
// folder and each one above it open to others.
func searchablePath(path string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if othersMaySearch(d) {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

func othersMaySearch(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// envList keeps variables in first-set order; a later set replaces.
type envList struct {
	list  []string
	index map[string]int
}

func newEnvList() *envList { return &envList{index: map[string]int{}} }

func (e *envList) set(kv string) {
	name, _, _ := strings.Cut(kv, "=")
	if i, ok := e.index[name]; ok {
		e.list[i] = kv
		return
	}
	e.index[name] = len(e.list)
	e.list = append(e.list, kv)
}

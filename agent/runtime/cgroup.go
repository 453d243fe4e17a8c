package runtime

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/levers9/levers9/agent/supervise"
)

// cgroupFS is where cgroup file systems are mounted.
const cgroupFS = "/sys/fs/cgroup"

// cgroups puts each service in cgroups of its own, with the limits of its
// spec, where the agent may create cgroups: v1 (a cpu, a memory and a pids
// hierarchy) or v2 (one unified hierarchy). The cgroups of one runtime
// live below the agent's own, in a folder named after the runtime's root,
// so that a later agent on the same root finds and removes leftovers.
type cgroups struct {
	v2   bool
	hier []hierarchy
	why  string // why some controllers are missing
}

// hierarchy is one cgroup tree the services are placed in.
type hierarchy struct {
	v2          bool
	controllers []string // of cpu, memory, pids
	home        string   // the agent's own cgroup there
	base        string   // home/levers9-HASH: the runtime's services' cgroups
}

// The base folder is made with the first service's cgroups and stays
// until the runtime closes (prune), so that the next services' cost one
// mkdir and one rmdir per hierarchy, not three: an agent leaves no trace
// in the cgroup tree, and one killed leaves an empty folder that the next
// runtime on its root removes (removeLeftovers), as does the last
// supervisor of a dead agent.

// ensure creates base, reporting whether it was new.
func (h hierarchy) ensure() (bool, error) {
	err := os.Mkdir(h.base, 0o755)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, errors.Unwrap(err)
	}
	if h.v2 {
		_ = os.WriteFile(filepath.Join(h.base, "cgroup.subtree_control"), []byte("+cpu +memory +pids"), 0)
	}
	return true, nil
}

// prune removes base unless services still use it.
func (h hierarchy) prune() { _ = syscall.Rmdir(h.base) }

// prune removes every hierarchy's base that no service uses.
func (cg *cgroups) prune() {
	for _, h := range cg.hier {
		h.prune()
	}
}

// probe checks that base can be created.
func (h hierarchy) probe() error {
	created, err := h.ensure()
	if created {
		h.prune()
	}
	return err
}

func (h hierarchy) has(c string) bool {
	for _, x := range h.controllers {
		if x == c {
			return true
		}
	}
	return false
}

// detectCgroups finds the hierarchies where the runtime rooted at root may
// create cgroups; controllers it cannot use are reported by missing.
func detectCgroups(root string) *cgroups {
	sum := sha256.Sum256([]byte(root))
	leaf := "levers9-" + hex.EncodeToString(sum[:4])
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return &cgroups{why: "no cgroups"}
	}
	paths := map[string]string{} // controller ("" for v2) → own path
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	if _, err := os.Stat(filepath.Join(cgroupFS, "cgroup.controllers")); err == nil {
		return detectV2(paths[""], leaf)
	}
	cg := &cgroups{}
	var failed []string
	for _, c := range []string{"cpu", "memory", "pids"} {
		p, ok := paths[c]
		if !ok {
			failed = append(failed, c+": not mounted")
			continue
		}
		h := hierarchy{controllers: []string{c}, home: filepath.Join(cgroupFS, c, p)}
		h.base = filepath.Join(h.home, leaf)
		if err := h.probe(); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		cg.hier = append(cg.hier, h)
	}
	// The freezer lets the agent freeze a cut-off node's services (see
	// Freezer); without it they are stopped by signal, so it is no limit
	// to report missing.
	if p, ok := paths["freezer"]; ok {
		h := hierarchy{controllers: []string{"freezer"}, home: filepath.Join(cgroupFS, "freezer", p)}
		h.base = filepath.Join(h.home, leaf)
		if h.probe() == nil {
			cg.hier = append(cg.hier, h)
		}
	}
	if len(failed) > 0 {
		cg.why = "no writable cgroup: " + strings.Join(failed, "; ")
	}
	return cg
}

func detectV2(own, leaf string) *cgroups {
	h := hierarchy{v2: true, home: filepath.Join(cgroupFS, own)}
	h.base = filepath.Join(h.home, leaf)
	// Controllers reach base only when home passes them down, which v2
	// refuses while home itself holds processes (unless it is the root).
	_ = os.WriteFile(filepath.Join(h.home, "cgroup.subtree_control"), []byte("+cpu +memory +pids"), 0)
	created, err := h.ensure()
	if err != nil {
		return &cgroups{v2: true, why: fmt.Sprintf("no writable cgroup: %v", err)}
	}
	b, _ := os.ReadFile(filepath.Join(h.base, "cgroup.subtree_control"))
	for _, c := range strings.Fields(string(b)) {
		if c == "cpu" || c == "memory" || c == "pids" {
			h.controllers = append(h.controllers, c)
		}
	}
	if created {
		h.prune()
	}
	cg := &cgroups{v2: true, hier: []hierarchy{h}}
	if len(h.controllers) < 3 {
		cg.why = "the agent's cgroup does not delegate the cpu, memory and pids controllers"
	}
	return cg
}

// enforces reports whether controller c is in use.
func (cg *cgroups) enforces(c string) bool {
	for _, h := range cg.hier {
		if h.has(c) {
			return true
		}
	}
	return false
}

// notice is the line a service's log starts with when limits it asks for
// are not enforced ("" when all are).
func (cg *cgroups) notice(s ServiceSpec) string {
	var missing []string
	if s.CPU > 0 && !cg.enforces("cpu") {
		missing = append(missing, "CPU")
	}
	if s.MemoryMiB > 0 && !cg.enforces("memory") {
		missing = append(missing, "memory")
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("levers9: this node's process runtime does not enforce %s limits (%s)", strings.Join(missing, " and "), cg.why)
}

// serviceCgroup is one service's cgroups.
type serviceCgroup struct {
	v2     bool
	dirs   []string
	moves  []string
	memory string // the dir with the memory controller, "" when none
	// freezer is the dir whose freezer freezes the service (v1's
	// freezer.state, v2's cgroup.freeze); "" when none.
	freezer  string
	limitMiB int64
}

// create makes the cgroups of service s of job jobID and sets its limits.
// pids <= 0 is no process limit.
func (cg *cgroups) create(jobID string, s ServiceSpec, pids int64) (*serviceCgroup, error) {
	sc := &serviceCgroup{v2: cg.v2, limitMiB: s.MemoryMiB}
	name := jobID + "." + s.Name // '.' is in neither name
	for _, h := range cg.hier {
		if len(h.controllers) == 0 {
			continue
		}
		dir := filepath.Join(h.base, name)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, os.ErrNotExist) { // the first service's: base is made now
			if _, err = h.ensure(); err == nil {
				err = os.Mkdir(dir, 0o755)
			}
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			_ = sc.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		sc.dirs = append(sc.dirs, dir)
		sc.moves = append(sc.moves, dir+"="+h.home)
		if err := sc.limit(h, dir, s, pids); err != nil {
			_ = sc.remove()
			return nil, fmt.Errorf("cgroup limits: %w", err)
		}
		if h.has("memory") {
			sc.memory = dir
		}
		if h.v2 || h.has("freezer") {
			sc.freezer = dir
		}
	}
	return sc, nil
}

const cfsPeriod = 100_000 // µs

func (sc *serviceCgroup) limit(h hierarchy, dir string, s ServiceSpec, pids int64) error {
	write := func(file, v string) error { return supervise.WriteControl(filepath.Join(dir, file), v) }
	if h.has("cpu") && s.CPU > 0 {
		quota := max(int64(s.CPU*cfsPeriod), 1000)
		if sc.v2 {
			if err := write("cpu.max", fmt.Sprintf("%d %d", quota, cfsPeriod)); err != nil {
				return err
			}
		} else {
			// cpu.cfs_period_us is the kernel's default, cfsPeriod, in a
			// new cgroup.
			if err := write("cpu.cfs_quota_us", strconv.FormatInt(quota, 10)); err != nil {
				return err
			}
		}
	}
	if h.has("memory") && s.MemoryMiB > 0 {
		bytes := strconv.FormatInt(s.MemoryMiB<<20, 10)
		if sc.v2 {
			if err := write("memory.max", bytes); err != nil {
				return err
			}
			_ = write("memory.swap.max", "0") // absent without swap accounting
		} else {
			if err := write("memory.limit_in_bytes", bytes); err != nil {
				return err
			}
			// Memory plus swap: without it the limit only moves pages to swap.
			_ = write("memory.memsw.limit_in_bytes", bytes)
		}
	}
	if h.has("pids") && pids > 0 {
		if err := write("pids.max", strconv.FormatInt(pids, 10)); err != nil {
			return err
		}
	}
	return nil
}

// oomKilled reports whether the kernel killed a process of the service for
// lack of memory.
func (sc *serviceCgroup) oomKilled() bool {
	if sc == nil || sc.memory == "" {
		return false
	}
	file := "memory.oom_control"
	if sc.v2 {
		file = "memory.events"
	}
	if n, ok := readKey(filepath.Join(sc.memory, file), "oom_kill"); ok {
		return n > 0
	}
	// Kernels before 4.13 count no kills; hitting the limit is the hint.
	n, err := readInt(filepath.Join(sc.memory, "memory.failcnt"))
	return err == nil && n > 0
}

// remove kills what is left in the service's cgroups and removes them.
func (sc *serviceCgroup) remove() error {
	if sc == nil {
		return nil
	}
	var errs []error
	for _, dir := range sc.dirs {
		if err := supervise.RemoveCgroup(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeLeftovers removes the service cgroups an earlier agent left.
func (cg *cgroups) removeLeftovers() error {
	var errs []error
	for _, h := range cg.hier {
		ents, err := os.ReadDir(h.base)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				if err := supervise.RemoveCgroup(filepath.Join(h.base, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
		h.prune()
	}
	return errors.Join(errs...)
}

// readKey reads "key N" from a flat-keyed cgroup file.
func readKey(file, key string) (int64, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// OutOfMemory is the reason of a service killed for lack of memory.
func OutOfMemory(limitMiB int64) string {
	if limitMiB <= 0 {
		return "out of memory"
	}
	return fmt.Sprintf("out of memory (limit %s)", memoryText(limitMiB))
}

// memoryText writes MiB the way people do: 512 MiB, 8 GiB, 1.5 GiB.
func memoryText(mib int64) string {
	if mib < 1024 {
		return fmt.Sprintf("%d MiB", mib)
	}
	g := strconv.FormatFloat(float64(mib)/1024, 'f', 2, 64)
	g = strings.TrimRight(strings.TrimRight(g, "0"), ".")
	return g + " GiB"
}

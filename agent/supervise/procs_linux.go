package supervise

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcStat is what /proc/PID/stat says about a process.
type ProcStat struct {
	PPID    int
	State   byte
	Started uint64 // clock ticks after boot: with the pid, it names one process
	// CPU is the process's own CPU time (user and system), Children's that
	// of the children it waited for, theirs included.
	CPU, ChildrenCPU time.Duration
}

// userHZ is the unit of /proc's times (USER_HZ, 100 on Linux).
const userHZ = 100

// ReadProcStat reads /proc/PID/stat; false when pid is gone.
func ReadProcStat(pid int) (ProcStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, false
	}
	// The command name is in parentheses and may hold anything: fields
	// are counted after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ProcStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ProcStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	started, _ := strconv.ParseUint(f[19], 10, 64)
	ticks := func(i, j int) time.Duration { // fields i and j (after the name)
		a, _ := strconv.ParseInt(f[i], 10, 64)
		b, _ := strconv.ParseInt(f[j], 10, 64)
		return time.Duration(a+b) * time.Second / userHZ
	}
	// utime and stime are fields 14 and 15, cutime and cstime 16 and 17.
	return ProcStat{PPID: ppid, State: f[0][0], Started: started, CPU: ticks(11, 12), ChildrenCPU: ticks(13, 14)}, true
}

// ProcessStart is the start time of pid, 0 when it does not exist.
func ProcessStart(pid int) uint64 {
	st, ok := ReadProcStat(pid)
	if !ok {
		return 0
	}
	return st.Started
}

// Descendants lists the living processes below pid (zombies excluded),
// from /proc: the tree a stop or kill must reach.
func Descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadProcStat(p); ok && st.State != 'Z' {
			parent[p] = st.PPID
		}
	}
	var out []int
	for p := range parent {
		for q, n := parent[p], 0; q > 1 && n < 4096; q, n = parent[q], n+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// KillTree kills pid's descendants, then pid and its process group pgid
// (0: none), until none is left or deadline passes. Descendants go first
// while pid lives, so that orphans come back to it (it is a subreaper)
// rather than escape to init.
func KillTree(pid, pgid int, deadline time.Time) error {
	for {
		kids := Descendants(pid)
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		if len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("processes still running after SIGKILL")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

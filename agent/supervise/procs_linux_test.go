package supervise

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// ReadProcStat reads a process's parent and its CPU times: its own, and
// apart its waited-for children's.
func TestReadProcStatCPU(t *testing.T) {
	read := func() ProcStat {
		t.Helper()
		st, ok := ReadProcStat(os.Getpid())
		if !ok {
			t.Fatal("no /proc/self/stat")
		}
		return st
	}
	st0 := read()
	if st0.PPID != os.Getppid() {
		t.Errorf("PPID %d, want %d", st0.PPID, os.Getppid())
	}
	// Spin until the own CPU shows it (in clock ticks), however loaded the
	// machine.
	st1 := read()
	for deadline := time.Now().Add(10 * time.Second); st1.CPU <= st0.CPU && time.Now().Before(deadline); st1 = read() {
		for spin := time.Now().Add(time.Millisecond); time.Now().Before(spin); {
		}
	}
	if st1.CPU <= st0.CPU || st1.ChildrenCPU != st0.ChildrenCPU {
		t.Errorf("after spinning: CPU %v → %v, children's %v → %v: want only the own grown", st0.CPU, st1.CPU, st0.ChildrenCPU, st1.ChildrenCPU)
	}
	// A child that spins, waited for.
	if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	if st2 := read(); st2.ChildrenCPU <= st1.ChildrenCPU {
		t.Errorf("after a child: children's CPU %v → %v, want grown", st1.ChildrenCPU, st2.ChildrenCPU)
	}
}

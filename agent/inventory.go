package agent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// DetectInventory reports this machine's CPUs, memory and NVIDIA GPUs (when
// nvidia-smi is present). Detection failures leave the value at zero: the
// operator can declare it instead.
func DetectInventory(ctx context.Context) wire.Inventory {
	inv := wire.Inventory{CPUs: float64(goruntime.NumCPU()), MemoryMiB: memTotalMiB()}
	inv.GPUs = detectGPUs(ctx)
	return inv
}

// memTotalMiB reads MemTotal from /proc/meminfo (Linux).
func memTotalMiB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

func detectGPUs(ctx context.Context) []wire.GPU {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=index,uuid,name", "--format=csv,noheader").Output()
	if err != nil {
		return nil
	}
	return countGPUs(strings.Split(string(out), "\n"))
}

// countGPUs groups nvidia-smi rows ("INDEX, UUID, NAME") into types with
// their device IDs: "NVIDIA H100 80GB HBM3" is an H100, the name queues
// price by, and each device is booked by its UUID (its index when the
// driver gave none), which CUDA_VISIBLE_DEVICES and Docker both take.
func countGPUs(rows []string) []wire.GPU {
	devices := map[string][]string{}
	for _, row := range rows {
		f := strings.SplitN(row, ",", 3)
		if len(f) != 3 {
			continue
		}
		index, uuid, name := strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
		t := gpuTypeOf(name)
		if t == "" {
			continue
		}
		id := uuid
		if id == "" || strings.EqualFold(id, "[N/A]") {
			id = index
		}
		devices[t] = append(devices[t], id)
	}
	var gpus []wire.GPU
	for t, ids := range devices {
		gpus = append(gpus, wire.GPU{Type: t, Count: len(ids), Devices: ids})
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Type < gpus[j].Type })
	return gpus
}

func gpuTypeOf(name string) string {
	for _, w := range strings.Fields(name) {
		switch strings.ToLower(w) {
		case "nvidia", "tesla", "geforce", "quadro":
			continue
		}
		// "A100-SXM4-80GB" → "A100"; "RTX" keeps its model number.
		if strings.EqualFold(w, "rtx") || strings.EqualFold(w, "gtx") {
			continue
		}
		t, _, _ := strings.Cut(w, "-")
		return t
	}
	return ""
}

// ParseGPUs parses declared GPUs: "H100:8", several separated by commas.
// Devices are numbered as the driver numbers them, across types in the
// order given: "H100:2,A100:1" is H100 0 and 1, A100 2.
func ParseGPUs(s string) ([]wire.GPU, error) {
	var gpus []wire.GPU
	next := 0
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		t, n, ok := strings.Cut(part, ":")
		count := 1
		if ok {
			c, err := strconv.Atoi(n)
			if err != nil || c < 1 {
				return nil, fmt.Errorf("--gpu %q: the count after ':' must be a positive number", part)
			}
			count = c
		}
		if t == "" || seen[t] {
			return nil, fmt.Errorf("--gpu %q: give each GPU type once, as TYPE:COUNT", part)
		}
		seen[t] = true
		ids := make([]string, count)
		for i := range ids {
			ids[i] = strconv.Itoa(next)
			next++
		}
		gpus = append(gpus, wire.GPU{Type: t, Count: count, Devices: ids})
	}
	return gpus, nil
}

// ParseMemory parses a size such as "256GiB", "512MiB" or "1.5TiB" into
// MiB. A bare number is MiB.
func ParseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mib    float64
	}{
		{"TiB", 1 << 20}, {"GiB", 1 << 10}, {"MiB", 1}, {"KiB", 1.0 / 1024},
		{"TB", 1e12 / (1 << 20)}, {"GB", 1e9 / (1 << 20)}, {"MB", 1e6 / (1 << 20)},
		{"T", 1 << 20}, {"G", 1 << 10}, {"M", 1},
	}
	mult := 1.0
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mib
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("--memory %q: want a size such as 256GiB or 512MiB", s)
	}
	return int64(v * mult), nil
}

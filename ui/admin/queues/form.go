package queues

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/ui/admin/adminkit"
)

// fields maps the names the domain and ent report problems under to the
// form's fields, so each message lands next to what was typed.
var fields = map[string]string{
	"name": "name", "description": "description", "mode": "mode",
	"max_gpus_per_job": "maxGpus", "max_cpu_per_job": "maxCpu", "max_memory_mib_per_job": "maxMemoryMiB",
	"multiplier": "multiplier", "prices": "prices", "gpu_prices": "gpuPrices",
	"cpu_price": "cpuPrice", "memory_price": "memoryPrice", "start_fee": "startFee",
	"default_cpu": "defaultCpu", "defaultCPU": "defaultCpu",
	"default_memory_mib": "defaultMemoryMiB", "defaultMemoryMib": "defaultMemoryMiB",
	"idle_timeout_seconds": "idleTimeout", "idleTimeoutSeconds": "idleTimeout",
}

// settings are a queue's fields as the form parsed them: the same for a
// new queue and a changed one; the edges are what the checkboxes say.
type settings struct {
	Name, Description string
	Mode              queue.Mode
	MaxGpus           int
	MaxCPU            float64
	MaxMemoryMiB      int64
	// What a service that names none gets; nil (left empty) keeps the
	// stored value, or the schema's default for a new queue.
	DefaultCPU       *float64
	DefaultMemoryMiB *int64
	// IdleTimeoutSeconds: interactive jobs idle this long stop (0 never);
	// nil (left empty) keeps the stored value, or never for a new queue.
	IdleTimeoutSeconds              *int
	GPUPrices                       []billing.GPURate
	CPUPrice, MemoryPrice, StartFee billing.Tokens
	Multiplier                      float64
	NodeIDs, StorageIDs, GroupIDs   []string
}

// parse reads the settings from f, putting what is not a number where a
// number belongs on its field. The domain checks the rest (ranges, prices).
func parse(f *adminkit.Form) settings {
	s := settings{
		Name: f.Get("name"), Description: f.Get("description"), Mode: queue.Mode(f.Get("mode")),
		NodeIDs: f.All("nodes"), StorageIDs: f.All("storages"), GroupIDs: f.All("groups"),
	}
	if queue.ModeValidator(s.Mode) != nil {
		f.Add("mode", "choose interactive, batch or both")
	}
	var err error
	if s.MaxGpus, err = strconv.Atoi(f.Get("maxGpus")); err != nil || s.MaxGpus < 0 {
		f.Add("maxGpus", "must be a whole number of GPUs, 0 or more")
	}
	if s.MaxCPU, err = strconv.ParseFloat(f.Get("maxCpu"), 64); err != nil || s.MaxCPU < 0 {
		f.Add("maxCpu", "must be a number of CPUs, like 0.5 or 64")
	}
	if s.MaxMemoryMiB, err = strconv.ParseInt(f.Get("maxMemoryMiB"), 10, 64); err != nil || s.MaxMemoryMiB < 0 {
		f.Add("maxMemoryMiB", "must be a whole number of MiB, 0 or more")
	}
	if v := f.Get("defaultCpu"); v != "" {
		if cpu, err := strconv.ParseFloat(v, 64); err != nil {
			f.Add("defaultCpu", "must be a number of CPUs, like 0.5 or 2")
		} else {
			s.DefaultCPU = &cpu
		}
	}
	if v := f.Get("defaultMemoryMiB"); v != "" {
		if mib, err := strconv.ParseInt(v, 10, 64); err != nil {
			f.Add("defaultMemoryMiB", "must be a whole number of MiB")
		} else {
			s.DefaultMemoryMiB = &mib
		}
	}
	if v := f.Get("idleTimeout"); v != "" {
		if secs, ok := idleSeconds(v); !ok {
			f.Add("idleTimeout", "must be a number of minutes, like 30, or 0 for never")
		} else {
			s.IdleTimeoutSeconds = &secs
		}
	}
	tokens := func(name string) billing.Tokens {
		t, err := billing.ParseTokens(f.Get(name))
		if err != nil {
			f.Add(name, err.Error())
		}
		return t
	}
	s.CPUPrice, s.MemoryPrice, s.StartFee = tokens("cpuPrice"), tokens("memoryPrice"), tokens("startFee")
	if s.Multiplier, err = strconv.ParseFloat(f.Get("multiplier"), 64); err != nil {
		f.Add("multiplier", "must be a number above 0, like 1 or 1.5")
	}
	s.GPUPrices = parseGPUPrices(f)
	return s
}

// idleSeconds reads the form's idle timeout, in minutes, as seconds. The
// domain checks the range; a number too large for it stays too large.
func idleSeconds(minutes string) (int, bool) {
	m, err := strconv.ParseFloat(minutes, 64)
	if err != nil || math.IsNaN(m) || m < 0 {
		return 0, false
	}
	return int(min(math.Round(m*60), math.MaxInt32)), true
}

// parseGPUPrices reads one "TYPE PRICE" per line.
func parseGPUPrices(f *adminkit.Form) []billing.GPURate {
	var out []billing.GPURate
	for i, line := range strings.Split(f.Values.Get("gpuPrices"), "\n") {
		parts := strings.Fields(line)
		if len(parts) == 0 {
			continue
		}
		if len(parts) != 2 {
			f.Add("gpuPrices", fmt.Sprintf("line %d: write a GPU type and its price per minute, like \"A100 0.5\"", i+1))
			continue
		}
		t, err := billing.ParseTokens(parts[1])
		if err != nil {
			f.Add("gpuPrices", fmt.Sprintf("line %d: %v", i+1, err))
			continue
		}
		if slices.ContainsFunc(out, func(g billing.GPURate) bool { return g.Type == parts[0] }) {
			f.Add("gpuPrices", fmt.Sprintf("line %d: GPU type %s is priced twice", i+1, parts[0]))
			continue
		}
		out = append(out, billing.GPURate{Type: parts[0], PerMinute: t})
	}
	return out
}

func (s settings) create() ent.CreateQueueInput {
	return ent.CreateQueueInput{
		Name: s.Name, Description: &s.Description, Mode: &s.Mode,
		MaxGpusPerJob: &s.MaxGpus, MaxCPUPerJob: &s.MaxCPU, MaxMemoryMibPerJob: &s.MaxMemoryMiB,
		DefaultCPU: s.DefaultCPU, DefaultMemoryMib: s.DefaultMemoryMiB, IdleTimeoutSeconds: s.IdleTimeoutSeconds,
		GpuPrices: s.GPUPrices, CPUPrice: &s.CPUPrice, MemoryPrice: &s.MemoryPrice, StartFee: &s.StartFee,
		Multiplier: &s.Multiplier, NodeIDs: s.NodeIDs, StorageIDs: s.StorageIDs, GroupIDs: s.GroupIDs,
	}
}

// update changes q to s: edges are added and removed to match the ticked
// boxes, so objects the admin cannot see are never touched.
func (s settings) update(q *ent.Queue) ent.UpdateQueueInput {
	in := ent.UpdateQueueInput{
		Name: &s.Name, Description: &s.Description, Mode: &s.Mode,
		MaxGpusPerJob: &s.MaxGpus, MaxCPUPerJob: &s.MaxCPU, MaxMemoryMibPerJob: &s.MaxMemoryMiB,
		DefaultCPU: s.DefaultCPU, DefaultMemoryMib: s.DefaultMemoryMiB, IdleTimeoutSeconds: s.IdleTimeoutSeconds,
		CPUPrice: &s.CPUPrice, MemoryPrice: &s.MemoryPrice, StartFee: &s.StartFee, Multiplier: &s.Multiplier,
	}
	if len(s.GPUPrices) == 0 {
		in.ClearGpuPrices = true
	} else {
		in.GpuPrices = s.GPUPrices
	}
	nodes, storages, groups := edgeIDs(q)
	in.AddNodeIDs, in.RemoveNodeIDs = diff(nodes, s.NodeIDs)
	in.AddStorageIDs, in.RemoveStorageIDs = diff(storages, s.StorageIDs)
	in.AddGroupIDs, in.RemoveGroupIDs = diff(groups, s.GroupIDs)
	return in
}

// diff returns what to add to have and what to remove from it to get want.
func diff(have, want []string) (add, remove []string) {
	for _, w := range want {
		if !slices.Contains(have, w) {
			add = append(add, w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			remove = append(remove, h)
		}
	}
	return add, remove
}

// edgeIDs are the IDs of q's nodes, storages and groups.
func edgeIDs(q *ent.Queue) (nodes, storages, groups []string) {
	for _, n := range q.Edges.Nodes {
		nodes = append(nodes, n.ID)
	}
	for _, s := range q.Edges.Storages {
		storages = append(storages, s.ID)
	}
	for _, g := range q.Edges.Groups {
		groups = append(groups, g.ID)
	}
	return nodes, storages, groups
}

// defaults are a new queue's form values: the schema's defaults.
func defaults() url.Values {
	return url.Values{
		"mode": {string(queue.DefaultMode)}, "maxGpus": {strconv.Itoa(queue.DefaultMaxGpusPerJob)},
		"maxCpu":           {strconv.FormatFloat(queue.DefaultMaxCPUPerJob, 'g', -1, 64)},
		"maxMemoryMiB":     {strconv.FormatInt(queue.DefaultMaxMemoryMibPerJob, 10)},
		"defaultCpu":       {strconv.FormatFloat(queue.DefaultDefaultCPU, 'g', -1, 64)},
		"defaultMemoryMiB": {strconv.FormatInt(queue.DefaultDefaultMemoryMib, 10)},
		"idleTimeout":      {minutes(queue.DefaultIdleTimeoutSeconds)},
		"cpuPrice":         {"0"}, "memoryPrice": {"0"}, "startFee": {"0"},
		"multiplier": {strconv.FormatFloat(queue.DefaultMultiplier, 'g', -1, 64)},
	}
}

// values are q's settings as form values, for the edit form.
func values(q *ent.Queue) url.Values {
	var gpu []string
	for _, g := range q.GpuPrices {
		gpu = append(gpu, g.Type+" "+g.PerMinute.String())
	}
	nodes, storages, groups := edgeIDs(q)
	return url.Values{
		"name": {q.Name}, "description": {q.Description}, "mode": {string(q.Mode)},
		"maxGpus": {strconv.Itoa(q.MaxGpusPerJob)}, "maxCpu": {strconv.FormatFloat(q.MaxCPUPerJob, 'g', -1, 64)},
		"maxMemoryMiB":     {strconv.FormatInt(q.MaxMemoryMibPerJob, 10)},
		"defaultCpu":       {strconv.FormatFloat(q.DefaultCPU, 'g', -1, 64)},
		"defaultMemoryMiB": {strconv.FormatInt(q.DefaultMemoryMib, 10)},
		"idleTimeout":      {minutes(q.IdleTimeoutSeconds)},
		"gpuPrices":        {strings.Join(gpu, "\n")},
		"cpuPrice":         {q.CPUPrice.String()}, "memoryPrice": {q.MemoryPrice.String()}, "startFee": {q.StartFee.String()},
		"multiplier": {strconv.FormatFloat(q.Multiplier, 'g', -1, 64)},
		"nodes":      nodes, "storages": storages, "groups": groups,
	}
}

// minutes writes an idle timeout in seconds as the form's minutes.
func minutes(seconds int) string {
	return strconv.FormatFloat(float64(seconds)/60, 'g', -1, 64)
}

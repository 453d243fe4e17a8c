package scheduling

import (
	"math"
	"slices"
	"strings"
)

// The scheduler works on a compiled copy of its input: GPU types become
// small integers and CPU becomes millicores, so checking a node is a few
// integer comparisons and the caller's maps are never written.

// millicores converts cores; requests round up and capacity rounds down
// so that rounding can never over-commit. Values given to three decimals
// are exact.
func millicores(cores float64, up bool) int64 {
	r := cores * 1000
	if n := math.Round(r); math.Abs(r-n) < 1e-6 {
		return int64(n)
	}
	if up {
		return int64(math.Ceil(r))
	}
	return int64(math.Floor(r))
}

// pool is an amount of resources in compiled form.
type pool struct {
	cpu  int64 // millicores
	mem  int64 // MiB
	gpus []int // by type index
}

type nodeState struct {
	id, name string
	free     pool
	capacity pool
	freeGPUs int // total over all types, for the best-fit tie-break
}

// label names a node for people.
func (n *nodeState) label() string {
	if n.name != "" {
		return n.name
	}
	return n.id
}

// gpuDemand is one service's GPUs.
type gpuDemand struct {
	service string
	count   int
	types   []int // acceptable types, most preferred first, no repeats
}

// demand is a whole job in compiled form.
type demand struct {
	job   *Job
	cpu   int64
	mem   int64
	gpu   []gpuDemand // services with GPUs, in service order
	gpus  int         // GPUs over all services
	types []int       // every acceptable type, in first-appearance order
}

type cluster struct {
	typeNames []string
	typeIDs   map[string]int
	nodes     []*nodeState // sorted by ID
}

func (c *cluster) typeID(name string) int {
	if id, ok := c.typeIDs[name]; ok {
		return id
	}
	c.typeIDs[name] = len(c.typeNames)
	c.typeNames = append(c.typeNames, name)
	return len(c.typeNames) - 1
}

// newCluster compiles valid input. Types are interned from jobs too, so a
// type no node has is just a type with zero GPUs everywhere.
func newCluster(nodes []Node, jobs []Job) (*cluster, []demand) {
	c := &cluster{typeIDs: map[string]int{}}
	// Sorted keys keep type indices, and so everything after, independent
	// of map iteration order.
	for _, n := range nodes {
		for _, t := range sortedKeys(n.Capacity.GPUs) {
			c.typeID(t)
		}
	}
	demands := make([]demand, len(jobs))
	for i := range jobs {
		demands[i] = c.compileJob(&jobs[i])
	}
	c.nodes = make([]*nodeState, len(nodes))
	for i, n := range nodes {
		c.nodes[i] = c.compileNode(n)
	}
	slices.SortFunc(c.nodes, func(a, b *nodeState) int { return strings.Compare(a.id, b.id) })
	return c, demands
}

func (c *cluster) compileNode(n Node) *nodeState {
	s := &nodeState{
		id: n.ID, name: n.Name,
		capacity: pool{cpu: millicores(n.Capacity.CPU, false), mem: n.Capacity.MemoryMiB, gpus: make([]int, len(c.typeNames))},
	}
	s.free = pool{
		cpu:  max(0, s.capacity.cpu-millicores(n.Used.CPU, true)),
		mem:  max(0, s.capacity.mem-n.Used.MemoryMiB),
		gpus: make([]int, len(c.typeNames)),
	}
	for t, count := range n.Capacity.GPUs {
		id := c.typeIDs[t]
		s.capacity.gpus[id] = count
		s.free.gpus[id] = max(0, count-n.Used.GPUs[t])
		s.freeGPUs += s.free.gpus[id]
	}
	return s
}

func (c *cluster) compileJob(j *Job) demand {
	d := demand{job: j}
	seen := map[int]bool{}
	for _, s := range j.Services {
		d.cpu += millicores(s.CPU, true)
		d.mem += s.MemoryMiB
		if s.GPUs == 0 {
			continue
		}
		d.gpus += s.GPUs
		g := gpuDemand{service: s.Name, count: s.GPUs}
		for _, name := range s.GPUTypes {
			id := c.typeID(name)
			if slices.Contains(g.types, id) {
				continue
			}
			g.types = append(g.types, id)
			if !seen[id] {
				seen[id] = true
				d.types = append(d.types, id)
			}
		}
		d.gpu = append(d.gpu, g)
	}
	return d
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

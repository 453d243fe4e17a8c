package scheduling

import (
	"math"
	"slices"
	"strconv"
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
	cpu   int64        // millicores
	mem   int64        // MiB
	gpus  []int        // by type index
	taken map[int]bool // host ports held; nil: none
}

// portsFree reports whether none of ports is held.
func (p *pool) portsFree(ports []int) bool {
	for _, port := range ports {
		if p.taken[port] {
			return false
		}
	}
	return true
}

type nodeState struct {
	id, name   string
	free       pool
	capacity   pool
	freeGPUs   int // total over all types, for the best-fit tie-break
	containers bool
	images     []int            // held images that some job asks for, by index; sorted
	src        *Node            // the input, read only
	devices    map[int]*devices // by type index, built when first needed
}

// eligible reports whether d may run on n at all, whatever is free.
func (n *nodeState) eligible(d *demand) bool {
	return (!d.containers || n.containers) && (d.pin == "" || d.pin == n.id)
}

// devices are a node's GPUs of one type, by index in inventory order.
type devices struct {
	ids    []string // nil: the index is the ID
	count  int
	booked []int // indices held, sorted, unique
}

func (v *devices) id(i int) string {
	if v.ids == nil {
		return strconv.Itoa(i)
	}
	return v.ids[i]
}

// index is the index of device id, or -1 if the node has no such device.
func (v *devices) index(id string) int {
	if v.ids != nil {
		return slices.Index(v.ids, id)
	}
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= v.count || strconv.Itoa(i) != id {
		return -1
	}
	return i
}

func (v *devices) hold(i int) {
	if k, found := slices.BinarySearch(v.booked, i); !found {
		v.booked = slices.Insert(v.booked, k, i)
	}
}

// book holds the lowest n free devices and returns their IDs.
func (v *devices) book(n int) []string {
	ids := make([]string, 0, n)
	picked := make([]int, 0, n)
	k := 0 // into v.booked, which is sorted
	for i := 0; i < v.count && len(picked) < n; i++ {
		for k < len(v.booked) && v.booked[k] < i {
			k++
		}
		if k < len(v.booked) && v.booked[k] == i {
			continue
		}
		picked = append(picked, i)
		ids = append(ids, v.id(i))
	}
	for _, i := range picked {
		v.hold(i)
	}
	return ids
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
	job        *Job
	cpu        int64
	mem        int64
	gpu        []gpuDemand // services with GPUs, in service order
	gpus       int         // GPUs over all services
	types      []int       // every acceptable type, in first-appearance order
	ports      []int       // fixed host ports over all services, sorted
	containers bool        // some service runs an image
	images     []int       // per service with an image, its index; repeats kept (a count)
	pin        string      // the only node ID allowed; "" for any
}

type cluster struct {
	typeNames []string
	typeIDs   map[string]int
	imageIDs  map[string]int // images jobs ask for, interned like types
	nodes     []*nodeState   // sorted by ID
}

func (c *cluster) imageID(name string) int {
	if id, ok := c.imageIDs[name]; ok {
		return id
	}
	c.imageIDs[name] = len(c.imageIDs)
	return len(c.imageIDs) - 1
}

// held counts the entries of images (a demand's) that n holds.
func (n *nodeState) held(images []int) int {
	if len(n.images) == 0 {
		return 0
	}
	count := 0
	for _, id := range images {
		if _, ok := slices.BinarySearch(n.images, id); ok {
			count++
		}
	}
	return count
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
	c := &cluster{typeIDs: map[string]int{}, imageIDs: map[string]int{}}
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
	for i := range nodes {
		c.nodes[i] = c.compileNode(&nodes[i])
	}
	slices.SortFunc(c.nodes, func(a, b *nodeState) int { return strings.Compare(a.id, b.id) })
	return c, demands
}

// devicesOf is n's devices of type t with those booked already; built on
// first use, as most nodes of a pass never get a GPU job.
func (c *cluster) devicesOf(n *nodeState, t int) *devices {
	if v, ok := n.devices[t]; ok {
		return v
	}
	name := c.typeNames[t]
	v := &devices{ids: n.src.Devices[name], count: n.src.Capacity.GPUs[name]}
	for _, dev := range n.src.Booked[name] {
		if i := v.index(dev); i >= 0 {
			v.hold(i)
		}
	}
	if n.devices == nil {
		n.devices = map[int]*devices{}
	}
	n.devices[t] = v
	return v
}

func (c *cluster) compileNode(n *Node) *nodeState {
	s := &nodeState{
		id: n.ID, name: n.Name, containers: n.Containers, src: n,
		capacity: pool{cpu: millicores(n.Capacity.CPU, false), mem: n.Capacity.MemoryMiB, gpus: make([]int, len(c.typeNames))},
	}
	s.free = pool{
		cpu:  max(0, s.capacity.cpu-millicores(n.Used.CPU, true)),
		mem:  max(0, s.capacity.mem-n.Used.MemoryMiB),
		gpus: make([]int, len(c.typeNames)),
	}
	for t, count := range n.Capacity.GPUs {
		id := c.typeIDs[t]
		unbooked := count
		if len(n.Booked[t]) > 0 {
			unbooked -= len(c.devicesOf(s, id).booked)
		}
		s.capacity.gpus[id] = count
		s.free.gpus[id] = max(0, min(count-n.Used.GPUs[t], unbooked))
		s.freeGPUs += s.free.gpus[id]
	}
	if len(n.Ports) > 0 {
		s.free.taken = make(map[int]bool, len(n.Ports))
		for _, p := range n.Ports {
			s.free.taken[p] = true
		}
	}
	// Jobs are compiled first, so an image no job asks for is dropped
	// here and costs nothing later.
	for _, img := range n.Images {
		if id, ok := c.imageIDs[img]; ok {
			s.images = append(s.images, id)
		}
	}
	slices.Sort(s.images)
	s.images = slices.Compact(s.images)
	return s
}

func (c *cluster) compileJob(j *Job) demand {
	d := demand{job: j, pin: j.Pin.Node}
	seen := map[int]bool{}
	for _, s := range j.Services {
		d.cpu += millicores(s.CPU, true)
		d.mem += s.MemoryMiB
		d.containers = d.containers || (s.Image != "" && !s.Venv)
		if s.Image != "" {
			d.images = append(d.images, c.imageID(s.Image))
		}
		d.ports = append(d.ports, s.Ports...)
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
	slices.Sort(d.ports)
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

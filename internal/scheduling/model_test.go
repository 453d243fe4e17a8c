package scheduling

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// This file holds a random input generator and a brute-force model of the
// placement policy, written independently of the implementation: floats
// instead of millicores (inputs are quarter cores, so sums are exact),
// every GPU type assignment enumerated instead of searched, and devices
// as lists of free IDs instead of booked indices.

var modelTypes = []string{"H100", "A100", "L4"}

func quarter(n int) float64 { return float64(n) / 4 }

// modelPorts are the fixed ports of random input: few, so they collide.
var modelPorts = []int{8000, 8001, 8888}

// modelImages are the images of random input: few, so nodes hold them.
var modelImages = []string{"busybox", "levers9-bp/t:a", "levers9-bp/t:b"}

// randomInput makes one queue: 1–50 nodes, 1–200 jobs of 1–4 services,
// 1–3 GPU types plus one no node has, preference lists, partly used and
// sometimes over-used nodes, some running containers, with listed or
// numbered devices partly booked (some by services that predate devices),
// ports held, images held (repeated, and some no job asks for); jobs with
// images, fixed ports and pins (some to nodes not in the queue).
func randomInput(rng *rand.Rand) ([]Node, []Job) {
	types := modelTypes[:1+rng.IntN(len(modelTypes))]
	nodes := make([]Node, 1+rng.IntN(50))
	for i, id := range rng.Perm(len(nodes)) {
		n := Node{ID: fmt.Sprintf("n%03d", id), Containers: rng.IntN(3) > 0}
		if rng.IntN(4) > 0 {
			n.Name = "node-" + n.ID
		}
		n.Capacity = Resources{CPU: quarter(rng.IntN(257)), MemoryMiB: rng.Int64N(257) * 256, GPUs: map[string]int{}}
		for _, t := range types {
			if rng.IntN(2) == 0 {
				n.Capacity.GPUs[t] = rng.IntN(9)
			}
		}
		n.Used = Resources{CPU: usedOf(rng, n.Capacity.CPU), MemoryMiB: int64(usedOf(rng, float64(n.Capacity.MemoryMiB)/256)) * 256}
		if rng.IntN(2) == 0 {
			n.Used.GPUs = map[string]int{}
			for _, t := range sortedKeys(n.Capacity.GPUs) { // map order would make seeds unrepeatable
				n.Used.GPUs[t] = int(usedOf(rng, float64(n.Capacity.GPUs[t])))
			}
		}
		randomDevices(rng, &n)
		for _, p := range modelPorts {
			if rng.IntN(4) == 0 {
				n.Ports = append(n.Ports, p)
			}
		}
		for _, img := range append(modelImages, "levers9-bp/t:unasked") {
			for rng.IntN(3) == 0 {
				n.Images = append(n.Images, img)
			}
		}
		rng.Shuffle(len(n.Images), func(i, j int) { n.Images[i], n.Images[j] = n.Images[j], n.Images[i] })
		nodes[i] = n
	}
	jobs := make([]Job, 1+rng.IntN(200))
	for i, id := range rng.Perm(len(jobs)) {
		j := Job{
			ID:        fmt.Sprintf("j%04d", id),
			Priority:  rng.IntN(5) - 2,
			Submitted: t0.Add(time.Duration(rng.IntN(20)) * time.Minute),
		}
		for k := range 1 + rng.IntN(4) {
			s := Service{Name: fmt.Sprintf("s%d", k), CPU: quarter(rng.IntN(33)), MemoryMiB: rng.Int64N(33) * 256}
			if rng.IntN(2) == 0 {
				s.GPUs = 1 + rng.IntN(4)
				s.GPUTypes = randomList(rng, types)
			}
			if rng.IntN(3) == 0 {
				s.Image = modelImages[rng.IntN(len(modelImages))]
				s.Venv = strings.HasPrefix(s.Image, "levers9-bp/") && rng.IntN(2) == 0
			}
			for _, p := range modelPorts {
				if rng.IntN(12) == 0 && !slices.ContainsFunc(j.Services, func(o Service) bool { return slices.Contains(o.Ports, p) }) {
					s.Ports = append(s.Ports, p)
				}
			}
			j.Services = append(j.Services, s)
		}
		if rng.IntN(10) == 0 {
			j.Pin = Pin{Node: fmt.Sprintf("n%03d", rng.IntN(len(nodes)+2)), Name: "pinned", Why: "bucket b is on its disk"}
		}
		jobs[i] = j
	}
	return nodes, jobs
}

// randomDevices lists n's devices (or leaves them numbered) in an order
// that is not sorted, and books some: by services counted in Used, by
// services that predate devices (counted, no ID), and IDs the node does
// not list (a device gone since), and a few beyond what Used counts.
func randomDevices(rng *rand.Rand, n *Node) {
	for _, t := range sortedKeys(n.Capacity.GPUs) {
		c := n.Capacity.GPUs[t]
		ids := []string{}
		if rng.IntN(2) == 0 {
			for _, k := range rng.Perm(c) {
				ids = append(ids, fmt.Sprintf("GPU-%s-%d", t, k))
			}
			if n.Devices == nil {
				n.Devices = map[string][]string{}
			}
			n.Devices[t] = ids
		} else {
			for k := range c {
				ids = append(ids, fmt.Sprint(k))
			}
		}
		book := func(id string) {
			if n.Booked == nil {
				n.Booked = map[string][]string{}
			}
			n.Booked[t] = append(n.Booked[t], id)
		}
		held := n.Used.GPUs[t]
		for _, id := range ids {
			switch {
			case held > 0 && rng.IntN(2) == 0:
				book(id)
				held--
			case rng.IntN(16) == 0: // a caller whose Used lags behind
				book(id)
			}
		}
		if rng.IntN(8) == 0 {
			book("GPU-gone")
		}
	}
}

func usedOf(rng *rand.Rand, capacity float64) float64 {
	switch rng.IntN(20) {
	case 0:
		return float64(int(capacity) + 1 + rng.IntN(4))
	case 1, 2, 3, 4, 5:
		return 0
	}
	return float64(int(capacity*rng.Float64()*4)) / 4
}

func randomList(rng *rand.Rand, types []string) []string {
	list := slices.Clone(types)
	rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	list = list[:1+rng.IntN(len(list))]
	if rng.IntN(10) == 0 {
		list = slices.Insert(list, rng.IntN(len(list)+1), "B200")
	}
	return list
}

func deepCopyNodes(nodes []Node) []Node {
	out := slices.Clone(nodes)
	for i := range out {
		out[i].Capacity.GPUs = maps.Clone(out[i].Capacity.GPUs)
		out[i].Used.GPUs = maps.Clone(out[i].Used.GPUs)
		out[i].Images = slices.Clone(out[i].Images)
	}
	return out
}

type modelNode struct {
	id         string
	cpu        float64
	mem        int64
	gpus       map[string]int      // free count per type
	devs       map[string][]string // free device IDs per type, in inventory order
	ports      map[int]bool        // held
	containers bool
	images     []string // held, as given
}

// modelDeviceIDs are a node's devices of type t as the Node comment says.
func modelDeviceIDs(n Node, t string) []string {
	if ids, ok := n.Devices[t]; ok {
		return ids
	}
	ids := []string{}
	for i := range n.Capacity.GPUs[t] {
		ids = append(ids, fmt.Sprint(i))
	}
	return ids
}

func modelFree(n Node) *modelNode {
	m := &modelNode{
		id: n.ID, cpu: max(0, n.Capacity.CPU-n.Used.CPU), mem: max(0, n.Capacity.MemoryMiB-n.Used.MemoryMiB),
		gpus: map[string]int{}, devs: map[string][]string{}, ports: map[int]bool{}, containers: n.Containers,
		images: n.Images,
	}
	for t, c := range n.Capacity.GPUs {
		for _, id := range modelDeviceIDs(n, t) {
			if !slices.Contains(n.Booked[t], id) {
				m.devs[t] = append(m.devs[t], id)
			}
		}
		m.gpus[t] = max(0, min(c-n.Used.GPUs[t], len(m.devs[t])))
	}
	for _, p := range n.Ports {
		m.ports[p] = true
	}
	return m
}

func modelCapacity(n Node) *modelNode {
	return modelFree(Node{ID: n.ID, Capacity: n.Capacity, Devices: n.Devices, Containers: n.Containers})
}

// modelEligible: the job may run on n whatever is free there.
func modelEligible(j Job, n *modelNode) bool {
	images := slices.ContainsFunc(j.Services, func(s Service) bool { return s.Image != "" && !s.Venv })
	return (!images || n.containers) && (j.Pin.Node == "" || j.Pin.Node == n.id)
}

func modelPortsFree(j Job, n *modelNode) bool {
	for _, s := range j.Services {
		for _, p := range s.Ports {
			if n.ports[p] {
				return false
			}
		}
	}
	return true
}

// modelKind is the kind of reason a job that was not placed gets.
func modelKind(j Job, nodes []Node) ReasonKind {
	if len(nodes) == 0 {
		return NoNodes
	}
	capacity := modelNodes(nodes, modelCapacity)
	if j.Pin.Node != "" && !slices.ContainsFunc(capacity, func(n *modelNode) bool { return n.id == j.Pin.Node }) {
		return PinnedAway
	}
	if !slices.ContainsFunc(capacity, func(n *modelNode) bool { return modelEligible(j, n) }) {
		return NoContainers
	}
	if !modelFitsAnywhere(j, capacity) {
		return TooLarge
	}
	return Waiting
}

func modelNodes(nodes []Node, pool func(Node) *modelNode) []*modelNode {
	out := []*modelNode{}
	for _, n := range nodes {
		out = append(out, pool(n))
	}
	slices.SortFunc(out, func(a, b *modelNode) int { return strings.Compare(a.id, b.id) })
	return out
}

func modelOrder(jobs []Job) []Job {
	out := slices.Clone(jobs)
	slices.SortFunc(out, func(a, b Job) int {
		switch {
		case a.Priority != b.Priority:
			return b.Priority - a.Priority
		case !a.Submitted.Equal(b.Submitted):
			return a.Submitted.Compare(b.Submitted)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// modelAssign tries every assignment in lexicographic order of preference
// ranks and returns the first that fits, as ranks and types per GPU service.
func modelAssign(j Job, free map[string]int) ([]int, []string, bool) {
	var svcs []Service
	for _, s := range j.Services {
		if s.GPUs > 0 {
			svcs = append(svcs, s)
		}
	}
	idx := make([]int, len(svcs))
	for {
		use := map[string]int{}
		types := make([]string, len(svcs))
		for k, s := range svcs {
			types[k] = s.GPUTypes[idx[k]]
			use[types[k]] += s.GPUs
		}
		fits := true
		for t, n := range use {
			fits = fits && n <= free[t]
		}
		if fits {
			return idx, types, true
		}
		k := len(svcs) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < len(svcs[k].GPUTypes) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return nil, nil, false
		}
	}
}

func modelTotals(j Job) (cpu float64, mem int64) {
	for _, s := range j.Services {
		cpu += s.CPU
		mem += s.MemoryMiB
	}
	return cpu, mem
}

func modelFits(j Job, n *modelNode) bool {
	cpu, mem := modelTotals(j)
	_, _, ok := modelAssign(j, n.gpus)
	return ok && cpu <= n.cpu && mem <= n.mem && modelEligible(j, n) && modelPortsFree(j, n)
}

func modelFitsAnywhere(j Job, nodes []*modelNode) bool {
	return slices.ContainsFunc(nodes, func(n *modelNode) bool { return modelFits(j, n) })
}

// modelHeld counts j's services whose image n holds.
func modelHeld(j Job, n *modelNode) int {
	held := 0
	for _, s := range j.Services {
		if s.Image != "" && slices.Contains(n.images, s.Image) {
			held++
		}
	}
	return held
}

// modelKey orders candidate nodes as the package comment says.
type modelKey struct {
	ranks                []int
	held                 int
	leftTypes, leftOther int
	leftCPU              float64
	leftMem              int64
	id                   string
}

func (a modelKey) less(b modelKey) bool {
	if c := slices.Compare(a.ranks, b.ranks); c != 0 {
		return c < 0
	}
	if a.held != b.held {
		return a.held > b.held
	}
	if a.leftTypes != b.leftTypes {
		return a.leftTypes < b.leftTypes
	}
	if a.leftOther != b.leftOther {
		return a.leftOther < b.leftOther
	}
	if a.leftCPU != b.leftCPU {
		return a.leftCPU < b.leftCPU
	}
	if a.leftMem != b.leftMem {
		return a.leftMem < b.leftMem
	}
	return a.id < b.id
}

// modelPlace is the policy for one job on the current state; it takes the
// job's resources from the chosen node.
func modelPlace(j Job, nodes []*modelNode) (Placement, bool) {
	cpu, mem := modelTotals(j)
	var best *modelNode
	var bestKey modelKey
	var bestTypes []string
	for _, n := range nodes {
		if cpu > n.cpu || mem > n.mem || !modelEligible(j, n) || !modelPortsFree(j, n) {
			continue
		}
		ranks, types, ok := modelAssign(j, n.gpus)
		if !ok {
			continue
		}
		chosen, all, gpus := 0, 0, 0
		for _, t := range slices.Compact(slices.Sorted(slices.Values(types))) {
			chosen += n.gpus[t]
		}
		for _, c := range n.gpus {
			all += c
		}
		for _, s := range j.Services {
			gpus += s.GPUs
		}
		k := modelKey{ranks, modelHeld(j, n), chosen - gpus, all - chosen, n.cpu - cpu, n.mem - mem, n.id}
		if best == nil || k.less(bestKey) {
			best, bestKey, bestTypes = n, k, types
		}
	}
	if best == nil {
		return Placement{}, false
	}
	p := Placement{JobID: j.ID, NodeID: best.id}
	best.cpu -= cpu
	best.mem -= mem
	k := 0
	for _, s := range j.Services {
		for _, port := range s.Ports {
			best.ports[port] = true
		}
		if s.GPUs > 0 {
			if p.GPUType == nil {
				p.GPUType, p.Devices = map[string]string{}, map[string][]string{}
			}
			t := bestTypes[k]
			p.GPUType[s.Name] = t
			best.gpus[t] -= s.GPUs
			p.Devices[s.Name] = slices.Clone(best.devs[t][:s.GPUs])
			best.devs[t] = best.devs[t][s.GPUs:]
			k++
		}
	}
	return p, true
}

func modelSchedule(jobs []Job, nodes []Node) ([]Placement, map[string]bool) {
	free := modelNodes(nodes, modelFree)
	var placed []Placement
	waiting := map[string]bool{}
	for _, j := range modelOrder(jobs) {
		if p, ok := modelPlace(j, free); ok {
			placed = append(placed, p)
		} else {
			waiting[j.ID] = true
		}
	}
	return placed, waiting
}

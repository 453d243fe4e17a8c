package scheduling

import "slices"

// ReasonKind says why a job was not placed.
type ReasonKind int

const (
	// NoNodes: the queue has no online nodes at all.
	NoNodes ReasonKind = iota + 1
	// Waiting: some node could hold the job once others finish.
	Waiting
	// TooLarge: no online node could hold the job even if idle; waiting
	// alone will not help, the job or the queue must change.
	TooLarge
	// PinnedAway: the job may run on one node only (Reason.Pin), and that
	// node is not among the queue's online nodes.
	PinnedAway
	// NoContainers: the job runs images and none of the nodes it may run
	// on runs containers.
	NoContainers
)

// Resource is one dimension of a node.
type Resource int

const (
	GPU Resource = iota + 1
	CPU
	Memory
	Port // the job's fixed host ports, all free on one node
)

// Reason is why a job fits nowhere, as data (for the API) and as a
// sentence (String). The zero Reason means the job was placed.
type Reason struct {
	Kind ReasonKind
	// Short is the scarcest resource: the one the fewest nodes have enough
	// of (GPUs, then CPU, then memory, then ports on ties).
	Short Resource
	// Together: every resource is available on some node, but no node has
	// all of them at once.
	Together bool
	Need     Need // what the job asks for, summed over its services
	// Nodes is how many online nodes were considered: those the job may
	// run on (its pinned node; nodes running containers for images).
	Nodes int
	// Enough is how many nodes have enough of Short: free for Waiting,
	// capacity for TooLarge.
	Enough int
	// Most is the most of Short on one node (cores, MiB, or GPUs of one
	// acceptable type), on MostNode (a name, or the ID of an unnamed node),
	// of type MostType for GPUs. MostNode is empty when no node has any.
	Most     float64
	MostType string
	MostNode string
	// Ports are the job's fixed ports that some considered node holds
	// already, sorted; for Short == Port they are what the job waits for.
	Ports []int
	// Pin is the one node the job may run on, when it has one.
	Pin Pin
	// NoImages is how many nodes were left out because the job runs
	// images and they run none.
	NoImages int
}

// Need is what a job asks for in total.
type Need struct {
	CPU       float64
	MemoryMiB int64
	GPUs      []GPUNeed // one entry per distinct preference list
	Ports     []int     // fixed host ports, sorted
	Images    bool      // some service runs an image
}

// GPUNeed is a number of GPUs of one of Types, most preferred first.
type GPUNeed struct {
	Count int
	Types []string
}

// explain works out why d fits on no node. It checks capacity first: a
// job that can never run deserves a different sentence than one that waits,
// and its survey is of capacity instead of what is free.
//
// Nodes the job may never run on come first: with a pin, only the pinned
// node counts; with images, only nodes that run containers.
func (c *cluster) explain(s *gpuSearch, d *demand) Reason {
	r := Reason{Kind: NoNodes, Need: c.need(d), Pin: d.job.Pin}
	if len(c.nodes) == 0 {
		return r
	}
	nodes := c.nodes
	if d.pin != "" {
		i := slices.IndexFunc(nodes, func(n *nodeState) bool { return n.id == d.pin })
		if i < 0 {
			r.Kind = PinnedAway
			return r
		}
		nodes = nodes[i : i+1]
	}
	if d.containers {
		s.nodes = s.nodes[:0]
		for _, n := range nodes {
			if n.containers {
				s.nodes = append(s.nodes, n)
			}
		}
		r.NoImages = len(nodes) - len(s.nodes)
		if len(s.nodes) == 0 {
			r.Kind, r.Nodes = NoContainers, len(nodes)
			return r
		}
		nodes = s.nodes
	}
	r.Nodes = len(nodes)
	// Usually some node could hold the job when idle, and the first few
	// show it; only then is the survey of what is free worth its pass.
	r.Kind = Waiting
	pick := func(n *nodeState) *pool { return &n.free }
	s.startJob()
	if !slices.ContainsFunc(nodes, func(n *nodeState) bool {
		return n.capacity.cpu >= d.cpu && n.capacity.mem >= d.mem && s.assign(d, n.capacity.gpus)
	}) {
		r.Kind, pick = TooLarge, func(n *nodeState) *pool { return &n.capacity }
	}
	s.startJob()
	a := c.survey(s, d, nodes, pick)
	r.Short, r.Together = a.scarcest(d)
	r.Enough = a.enough[r.Short]
	m := a.most[r.Short]
	r.Most, r.MostType, r.MostNode = m.amount, m.typ, m.node
	r.Ports = a.held
	return r
}

// survey counts, per resource, the nodes with enough of it in the pool
// that pick chooses, and where there is the most of it.
type survey struct {
	enough [Port + 1]int
	most   [Port + 1]most
	held   []int // the job's ports held on some node, sorted
}

type most struct {
	amount float64
	typ    string
	node   string
}

func (m *most) offer(amount float64, typ string, n *nodeState) {
	if amount > m.amount { // strict: the first node in ID order wins ties
		*m = most{amount: amount, typ: typ, node: n.label()}
	}
}

func (a *survey) count(res Resource, ok bool) {
	if ok {
		a.enough[res]++
	}
}

func (c *cluster) survey(s *gpuSearch, d *demand, nodes []*nodeState, pick func(*nodeState) *pool) survey {
	var a survey
	for _, n := range nodes {
		p := pick(n)
		cpu, mem, gpu := p.cpu >= d.cpu, p.mem >= d.mem, s.assign(d, p.gpus)
		a.count(GPU, gpu)
		a.count(CPU, cpu)
		a.count(Memory, mem)
		a.count(Port, p.portsFree(d.ports))
		for _, port := range d.ports {
			if p.taken[port] && !slices.Contains(a.held, port) {
				a.held = append(a.held, port)
			}
		}
		a.most[CPU].offer(float64(p.cpu)/1000, "", n)
		a.most[Memory].offer(float64(p.mem), "", n)
		for _, t := range d.types {
			a.most[GPU].offer(float64(p.gpus[t]), c.typeNames[t], n)
		}
	}
	slices.Sort(a.held)
	return a
}

// scarcest names the resource to blame. A resource no node has enough of
// is the answer; otherwise the job is blocked by the combination, and the
// resource on the fewest nodes is the most useful to mention.
func (a *survey) scarcest(d *demand) (Resource, bool) {
	var asked []Resource
	if len(d.gpu) > 0 {
		asked = append(asked, GPU)
	}
	if d.cpu > 0 {
		asked = append(asked, CPU)
	}
	if d.mem > 0 {
		asked = append(asked, Memory)
	}
	if len(d.ports) > 0 {
		asked = append(asked, Port)
	}
	if len(asked) == 0 {
		return CPU, true // unreachable: a job asking nothing fits any node
	}
	best := asked[0]
	for _, res := range asked[1:] {
		if a.enough[res] < a.enough[best] {
			best = res
		}
	}
	return best, a.enough[best] > 0
}

// need sums d for people: exact CPU from millicores, GPUs grouped by
// preference list.
func (c *cluster) need(d *demand) Need {
	n := Need{CPU: float64(d.cpu) / 1000, MemoryMiB: d.mem, Ports: slices.Clone(d.ports), Images: d.containers}
	for _, g := range d.gpu {
		types := make([]string, len(g.types))
		for i, t := range g.types {
			types[i] = c.typeNames[t]
		}
		i := slices.IndexFunc(n.GPUs, func(x GPUNeed) bool { return slices.Equal(x.Types, types) })
		if i < 0 {
			n.GPUs = append(n.GPUs, GPUNeed{Types: types})
			i = len(n.GPUs) - 1
		}
		n.GPUs[i].Count += g.count
	}
	return n
}

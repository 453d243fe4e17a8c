package scheduling

import (
	"fmt"
	"strconv"
	"strings"
)

// String says why the job waits, in words a person can act on, for a job
// submitted to queue; "" for the zero Reason.
func (r Reason) String(queue string) string {
	switch r.Kind {
	case NoNodes:
		return fmt.Sprintf("queue %s has no online nodes", queue)
	case PinnedAway:
		if r.Pin.Why == "" {
			return fmt.Sprintf("waiting for node %s, the only node the job may run on, to be online in queue %s", r.Pin.label(), queue)
		}
		return fmt.Sprintf("waiting for node %s to be online in queue %s: %s", r.Pin.label(), queue, r.Pin.Why)
	case NoContainers:
		return fmt.Sprintf("waiting for a node that runs containers in queue %s: 0 of %s %s images (docker)%s",
			queue, nodes(r.Nodes), runs(r.Nodes == 1), r.pinned())
	case Waiting:
		if r.Together {
			return fmt.Sprintf("waiting for one node with %s free in queue %s: each is free somewhere, but not together (%s)%s",
				r.Need.all(), queue, r.onlyOn(), r.leftOut())
		}
		if r.Short == Port {
			return fmt.Sprintf("waiting for %s in queue %s: %d of %s %s %s free%s",
				ports(r.Ports), queue, r.Enough, nodes(r.Nodes), have(r.Nodes == 1 || r.Enough == 1), itThem(len(r.Ports)), r.leftOut())
		}
		return fmt.Sprintf("waiting for %s in queue %s: %s%s", r.Need.of(r.Short, true, r.gib()), queue, r.shortfall(true), r.leftOut())
	case TooLarge:
		if r.Together {
			return fmt.Sprintf("no online node in queue %s is large enough: the job needs %s on one node; each exists, but never together (%s)%s",
				queue, r.Need.all(), r.onlyOn(), r.leftOut())
		}
		return fmt.Sprintf("no online node in queue %s is large enough: the job needs %s, %s%s",
			queue, r.Need.of(r.Short, false, r.gib()), r.shortfall(false), r.leftOut())
	}
	return ""
}

// leftOut says which nodes the counts leave out, and why.
func (r Reason) leftOut() string {
	s := ""
	if r.NoImages > 0 {
		s = fmt.Sprintf(" (not counting %s that %s no images)", nodes(r.NoImages), runs(r.NoImages == 1))
	}
	return s + r.pinned()
}

// pinned names the node a pinned job must run on.
func (r Reason) pinned() string {
	if r.Pin.Node == "" {
		return ""
	}
	if r.Pin.Why == "" {
		return fmt.Sprintf("; the job may run on node %s only", r.Pin.label())
	}
	return fmt.Sprintf("; the job may run on node %s only: %s", r.Pin.label(), r.Pin.Why)
}

// label names the pinned node for people.
func (p Pin) label() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Node
}

// shortfall says how close the queue comes to the scarce resource.
func (r Reason) shortfall(free bool) string {
	if r.Short == GPU {
		var b strings.Builder
		if free {
			fmt.Fprintf(&b, "%d of %s %s them", r.Enough, nodes(r.Nodes), have(r.Nodes == 1 || r.Enough == 1))
		} else {
			fmt.Fprintf(&b, "none of %s has them", nodes(r.Nodes))
		}
		if r.MostNode != "" {
			adj := ""
			if free {
				adj = "free "
			}
			fmt.Fprintf(&b, "; the most %son one node is %s %s (%s)", adj, r.amount(r.Most), r.MostType, r.MostNode)
		}
		return b.String()
	}
	if r.MostNode == "" {
		if free {
			return "none is free on " + anyOf(r.Nodes)
		}
		return fmt.Sprintf("none of %s has any", nodes(r.Nodes))
	}
	amount := r.amount(r.Most)
	if free {
		return fmt.Sprintf("the largest free is %s on %s", amount, r.MostNode)
	}
	return fmt.Sprintf("the largest node has %s (%s)", amount, r.MostNode)
}

// onlyOn names the scarcest resource of a combination that does not fit.
func (r Reason) onlyOn() string {
	return fmt.Sprintf("only %d of %s %s the %s", r.Enough, nodes(r.Nodes), have(r.Enough == 1), r.Short.noun())
}

// amount formats a quantity of the scarce resource.
func (r Reason) amount(v float64) string {
	if r.Short == Memory {
		return mebibytes(int64(v), r.gib())
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// gib: memory is shown in GiB when both numbers of a sentence are whole
// GiB, else both in MiB, so they compare at a glance and stay exact.
func (r Reason) gib() bool {
	return r.Need.MemoryMiB%1024 == 0 && int64(r.Most)%1024 == 0
}

func (res Resource) noun() string {
	switch res {
	case GPU:
		return "GPUs"
	case CPU:
		return "CPUs"
	case Port:
		return "ports"
	}
	return "memory"
}

// of describes the need for one resource: "16 CPUs", "64 GiB memory",
// "2 free H100 or A100".
func (n Need) of(res Resource, free, gib bool) string {
	switch res {
	case CPU:
		return cpus(n.CPU)
	case Memory:
		return mebibytes(n.MemoryMiB, gib) + " memory"
	case Port:
		return ports(n.Ports)
	}
	parts := make([]string, len(n.GPUs))
	for i, g := range n.GPUs {
		adj := ""
		if free {
			adj = "free "
		}
		parts[i] = fmt.Sprintf("%d %s%s", g.Count, adj, strings.Join(g.Types, " or "))
	}
	return strings.Join(parts, " and ")
}

// all lists every resource the job asks for.
func (n Need) all() string {
	gib := n.MemoryMiB%1024 == 0
	var parts []string
	if n.CPU > 0 {
		parts = append(parts, n.of(CPU, false, gib))
	}
	if n.MemoryMiB > 0 {
		parts = append(parts, n.of(Memory, false, gib))
	}
	if len(n.GPUs) > 0 {
		parts = append(parts, n.of(GPU, false, gib))
	}
	if len(n.Ports) > 0 {
		parts = append(parts, n.of(Port, false, gib))
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func cpus(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v == 1 {
		return s + " CPU"
	}
	return s + " CPUs"
}

func mebibytes(v int64, gib bool) string {
	if gib && v >= 1024 {
		return strconv.FormatInt(v/1024, 10) + " GiB"
	}
	return strconv.FormatInt(v, 10) + " MiB"
}

func nodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return strconv.Itoa(n) + " nodes"
}

func anyOf(n int) string {
	if n == 1 {
		return "the only node"
	}
	return "any of " + nodes(n)
}

// ports lists ports: "port 8888", "ports 8000, 8001 and 8888".
func ports(list []int) string {
	words := make([]string, len(list))
	for i, p := range list {
		words[i] = strconv.Itoa(p)
	}
	if len(words) == 1 {
		return "port " + words[0]
	}
	if len(words) == 0 {
		return "ports"
	}
	return "ports " + strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func itThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func runs(singular bool) string {
	if singular {
		return "runs"
	}
	return "run"
}

func have(singular bool) string {
	if singular {
		return "has"
	}
	return "have"
}

package scheduling

import "encoding/binary"

// Choosing GPU types is a small packing problem (two services may compete
// for one type), so it is a depth-first search in preference order: the
// first complete assignment found gives each service, in order, the most
// preferred type with which the rest of the job still fits.

const (
	// memoAfter is when the search starts remembering dead ends; real
	// jobs finish long before.
	memoAfter = 256
	// Budgets bound adversarial preference puzzles, per node and per job
	// over all nodes, so one hostile job cannot stall a scheduling pass.
	// A search that runs out counts as not fitting: the job may wait
	// needlessly, but nothing is over-committed.
	nodeBudget = 1 << 14
	jobBudget  = 1 << 18
)

// gpuSearch is reusable scratch space; one per goroutine.
type gpuSearch struct {
	d      *demand
	free   []int           // the node's free GPUs; changed during search, restored after
	choice []int           // per d.gpu entry: index into its types
	steps  int             // on this node
	left   int             // dead ends left for this job over all nodes; see startJob
	memo   map[string]bool // dead ends: service index + free counts of d.types
	key    []byte
	nodes  []*nodeState // scratch for explain
}

// startJob gives the search a fresh job budget.
func (s *gpuSearch) startJob() { s.left = jobBudget }

// assign finds the preferred assignment of d's GPU services onto free and
// leaves it in s.choice. free is restored before returning.
func (s *gpuSearch) assign(d *demand, free []int) bool {
	if len(d.gpu) == 0 {
		return true
	}
	// Cheap necessary conditions first: most nodes fail here.
	for _, g := range d.gpu {
		ok := false
		for _, t := range g.types {
			if free[t] >= g.count {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	avail := 0
	for _, t := range d.types {
		avail += free[t]
	}
	if avail < d.gpus {
		return false
	}
	s.d, s.free, s.steps = d, free, 0
	s.choice = s.choice[:0]
	for range d.gpu {
		s.choice = append(s.choice, 0)
	}
	clear(s.memo)
	return s.search(0)
}

func (s *gpuSearch) search(k int) bool {
	if k == len(s.d.gpu) {
		return true
	}
	s.steps++
	if s.exhausted() {
		return false
	}
	var key string
	if s.steps > memoAfter {
		if s.memo == nil {
			s.memo = map[string]bool{}
		}
		key = s.memoKey(k)
		if s.memo[key] {
			return false
		}
	}
	g := s.d.gpu[k]
	for i, t := range g.types {
		if s.free[t] < g.count {
			continue
		}
		s.free[t] -= g.count
		ok := s.search(k + 1)
		s.free[t] += g.count
		if ok {
			s.choice[k] = i
			return true
		}
	}
	if key != "" && !s.exhausted() {
		s.memo[key] = true // an aborted search proves nothing
	}
	s.left-- // only dead ends count, so big jobs that fit cost nothing
	return false
}

func (s *gpuSearch) exhausted() bool { return s.steps > nodeBudget || s.left < 0 }

func (s *gpuSearch) memoKey(k int) string {
	s.key = binary.AppendUvarint(s.key[:0], uint64(k))
	for _, t := range s.d.types {
		s.key = binary.AppendUvarint(s.key, uint64(s.free[t]))
	}
	return string(s.key)
}

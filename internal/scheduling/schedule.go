package scheduling

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Schedule places jobs on nodes in order (priority, higher first; then
// submit time; then ID), each on the node that fits it best given the jobs
// placed before it. A job that fits nowhere waits with its reason, and
// later jobs may still take what is free (backfill; see the package
// comment). placed is in scheduling order. Neither input is changed; an
// impossible input is an error and places nothing.
func Schedule(jobs []Job, nodes []Node) (placed []Placement, waiting map[string]Reason, err error) {
	if err := validateInput(jobs, nodes); err != nil {
		return nil, nil, fmt.Errorf("schedule %d jobs on %d nodes: %w", len(jobs), len(nodes), err)
	}
	c, demands := newCluster(nodes, jobs)
	slices.SortFunc(demands, func(a, b demand) int { return order(a.job, b.job) })
	waiting = map[string]Reason{}
	var s gpuSearch
	for i := range demands {
		d := &demands[i]
		if f, ok := c.bestFit(&s, d); ok {
			placed = append(placed, c.take(d, f))
			continue
		}
		waiting[d.job.ID] = c.explain(&s, d)
	}
	return placed, waiting, nil
}

// order is the scheduling order; IDs are unique, so it is total.
func order(a, b *Job) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := a.Submitted.Compare(b.Submitted); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

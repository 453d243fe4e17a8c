package placement

import (
	"context"
	"fmt"
	"slices"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/scheduling"
)

// chunk bounds IN lists, well below both databases' parameter limits.
const chunk = 1000

// state is one queue as the scheduler sees it, with what the writes need.
type state struct {
	nodes    []scheduling.Node
	jobs     []scheduling.Job
	nodeName map[string]string
	reason   map[string]string            // job ID → stored status_reason
	services map[string]map[string]string // job ID → service name → service ID
	invalid  map[string]string            // job ID → why it can never be placed
}

// newState is an empty state, to be filled by loadNodes and loadJobs.
func newState() *state {
	return &state{
		nodeName: map[string]string{},
		reason:   map[string]string{},
		services: map[string]map[string]string{},
		invalid:  map[string]string{},
	}
}

// cursor is the scheduling order position of the last job read.
type cursor struct {
	priority int
	created  time.Time
	id       string
}

// past selects the jobs after c in scheduling order.
func (c *cursor) past() predicate.Job {
	return job.Or(
		job.PriorityLT(c.priority),
		job.And(job.Priority(c.priority), job.CreatedAtGT(c.created)),
		job.And(job.Priority(c.priority), job.CreatedAt(c.created), job.IDGT(c.id)),
	)
}

func (st *state) loadNodes(ctx context.Context, c *ent.Client, dialectName, queueID string) error {
	q := c.Node.Query().
		Where(node.HasQueuesWith(queue.ID(queueID)), node.StatusEQ(node.StatusOnline)).
		Order(node.ByID()).
		Select(node.FieldID, node.FieldName, node.FieldInventory)
	if dialectName == dialect.Postgres {
		// The lock that keeps replicas from placing the same capacity twice;
		// SQLite has no row locks and needs none (one writer).
		q.ForUpdate()
	}
	nodes, err := q.All(ctx)
	if err != nil {
		return fmt.Errorf("locking nodes: %w", err)
	}
	index := make(map[string]int, len(nodes))
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		sn := scheduling.Node{ID: n.ID, Name: n.Name, Capacity: scheduling.Resources{
			CPU: n.Inventory.CPUs, MemoryMiB: n.Inventory.MemoryMiB,
		}}
		for _, g := range n.Inventory.GPUs {
			if sn.Capacity.GPUs == nil {
				sn.Capacity.GPUs = map[string]int{}
			}
			sn.Capacity.GPUs[g.Type] += g.Count
		}
		index[n.ID] = len(st.nodes)
		st.nodes = append(st.nodes, sn)
		st.nodeName[n.ID] = n.Name
		ids = append(ids, n.ID)
	}
	// Usage counts services of every queue: a node may serve several.
	for part := range slices.Chunk(ids, chunk) {
		used, err := c.Service.Query().
			Where(service.NodeIDIn(part...), service.StatusIn(service.StatusPending, service.StatusRunning)).
			Select(service.FieldNodeID, service.FieldCPU, service.FieldMemoryMib, service.FieldGpus, service.FieldGpuType).
			All(ctx)
		if err != nil {
			return fmt.Errorf("loading node usage: %w", err)
		}
		for _, u := range used {
			r := &st.nodes[index[u.NodeID]].Used
			r.CPU += u.CPU
			r.MemoryMiB += u.MemoryMib
			if u.Gpus > 0 {
				if r.GPUs == nil {
					r.GPUs = map[string]int{}
				}
				r.GPUs[u.GpuType] += u.Gpus
			}
		}
	}
	valid := st.nodes[:0]
	for _, n := range st.nodes {
		if err := scheduling.ValidateNode(n); err != nil {
			continue // bad inventory: the node takes no work until it reports a sane one
		}
		valid = append(valid, n)
	}
	st.nodes = valid
	return nil
}

// loadJobs reads the next page of at most limit pending jobs of the queue,
// in scheduling order after *after (nil: from the start), and moves *after
// to its last job. st.jobs gets those not placed yet (placed ones wait for
// their node to start them). more reports whether more jobs may follow.
func (st *state) loadJobs(ctx context.Context, c *ent.Client, queueID string, after **cursor, limit int) (more bool, err error) {
	q := c.Job.Query().
		Where(job.QueueID(queueID), job.StatusEQ(job.StatusPending)).
		Order(job.ByPriority(sql.OrderDesc()), job.ByCreatedAt(), job.ByID()).
		Limit(limit).
		Select(job.FieldID, job.FieldPriority, job.FieldCreatedAt, job.FieldStatusReason)
	if a := *after; a != nil {
		q.Where(a.past())
	}
	pending, err := q.All(ctx)
	if err != nil {
		return false, fmt.Errorf("loading pending jobs: %w", err)
	}
	st.jobs = st.jobs[:0]
	if len(pending) == 0 {
		return false, nil
	}
	last := pending[len(pending)-1]
	*after = &cursor{priority: last.Priority, created: last.CreatedAt, id: last.ID}
	more = len(pending) == limit
	ids := make([]string, len(pending))
	for i, j := range pending {
		ids[i] = j.ID
	}
	// Services by job ID, not by a join: PostgreSQL's planner, with the
	// stale statistics of a burst of submissions, nests loops over a join.
	byJob := map[string][]scheduling.Service{}
	placed := map[string]bool{} // placed already, waiting for its node to start it
	for part := range slices.Chunk(ids, chunk) {
		svcs, err := c.Service.Query().
			Where(service.JobIDIn(part...)).
			Select(service.FieldID, service.FieldJobID, service.FieldName, service.FieldCPU,
				service.FieldMemoryMib, service.FieldGpus, service.FieldGpuTypes,
				service.FieldNodeID, service.FieldStatus).
			All(ctx)
		if err != nil {
			return false, fmt.Errorf("loading pending services: %w", err)
		}
		for _, s := range svcs {
			if s.NodeID != "" || s.Status != service.StatusPending {
				placed[s.JobID] = true
				continue
			}
			byJob[s.JobID] = append(byJob[s.JobID], scheduling.Service{
				Name: s.Name, CPU: s.CPU, MemoryMiB: s.MemoryMib, GPUs: s.Gpus, GPUTypes: s.GpuTypes,
			})
			if st.services[s.JobID] == nil {
				st.services[s.JobID] = map[string]string{}
			}
			st.services[s.JobID][s.Name] = s.ID
		}
	}
	for _, j := range pending {
		if placed[j.ID] {
			continue
		}
		sj := scheduling.Job{ID: j.ID, Priority: j.Priority, Submitted: j.CreatedAt, Services: byJob[j.ID]}
		st.reason[j.ID] = j.StatusReason
		if err := scheduling.ValidateJob(sj); err != nil {
			st.invalid[j.ID] = "cannot be scheduled: " + err.Error()
			continue
		}
		st.jobs = append(st.jobs, sj)
	}
	return more, nil
}

package placement

import (
	"context"
	"fmt"
	"slices"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
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

// load locks the queue's online nodes (PostgreSQL) and reads them, what
// runs on them from any queue, and the queue's unplaced pending jobs.
func load(ctx context.Context, c *ent.Client, dialectName, queueID string) (*state, error) {
	st := &state{
		nodeName: map[string]string{},
		reason:   map[string]string{},
		services: map[string]map[string]string{},
		invalid:  map[string]string{},
	}
	if err := st.loadNodes(ctx, c, dialectName, queueID); err != nil {
		return nil, err
	}
	if err := st.loadJobs(ctx, c, queueID); err != nil {
		return nil, err
	}
	return st, nil
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

func (st *state) loadJobs(ctx context.Context, c *ent.Client, queueID string) error {
	pending, err := c.Job.Query().
		Where(job.QueueID(queueID), job.StatusEQ(job.StatusPending)).
		Select(job.FieldID, job.FieldPriority, job.FieldCreatedAt, job.FieldStatusReason).
		All(ctx)
	if err != nil {
		return fmt.Errorf("loading pending jobs: %w", err)
	}
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
			return fmt.Errorf("loading pending services: %w", err)
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
	return nil
}

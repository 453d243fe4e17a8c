package scheduler

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
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
	storages map[string]nodeStorage       // the tenant's node storages by ID
	// draining are the names of the queue's online nodes that an admin is
	// draining: they take no new jobs, and waiting jobs are told so.
	draining []string
	// imagesRead are the blueprint images whose holders are in the nodes'
	// Images already (see loadImages).
	imagesRead map[string]bool
	timing     timing
	// traced: the pass traces its placements, so it reads the jobs'
	// traceparents into traceParent (job ID → traceparent, when set).
	traced      bool
	traceParent map[string]string
	// backlogged: the pass stopped early, jobs left unread waiting for
	// capacity (see queue.backlogged).
	backlogged bool
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
		Select(node.FieldID, node.FieldName, node.FieldInventory, node.FieldDrain)
	if dialectName == dialect.Postgres {
		// The lock that keeps replicas from placing the same capacity twice;
		// SQLite has no row locks and needs none (one writer). NO KEY
		// UPDATE excludes every other pass and writer of the nodes, but not
		// the key-share locks of foreign-key checks: a transaction
		// recording a report on the node's services (which takes one when
		// it updates a row twice) does not hold the pass up.
		q.ForUpdate(func(o *entsql.LockOptions) { o.Strength = entsql.LockNoKeyUpdate })
	}
	locked, err := q.All(ctx)
	if err != nil {
		return fmt.Errorf("locking nodes: %w", err)
	}
	index := make(map[string]int, len(locked))
	ids := make([]string, 0, len(locked))
	for _, n := range locked {
		if n.Drain {
			// Its running jobs go on; their usage matters to no placement here.
			st.draining = append(st.draining, n.Name)
			continue
		}
		sn := scheduling.Node{ID: n.ID, Name: n.Name, Containers: n.Inventory.Containers(), Capacity: scheduling.Resources{
			CPU: n.Inventory.CPUs, MemoryMiB: n.Inventory.MemoryMiB,
		}}
		sn.Capacity.GPUs, sn.Devices = gpuDevices(n.Inventory)
		index[n.ID] = len(st.nodes)
		st.nodes = append(st.nodes, sn)
		st.nodeName[n.ID] = n.Name
		ids = append(ids, n.ID)
	}
	slices.Sort(st.draining)
	// What is held counts services of every queue: a node may serve
	// several. The maps are this pass's own, so placing adds to them.
	held, err := nodes.HeldOn(ctx, c, ids)
	if err != nil {
		return fmt.Errorf("loading node usage: %w", err)
	}
	for id, h := range held {
		n := &st.nodes[index[id]]
		// Services placed before devices were booked count in Used.GPUs
		// without devices: the scheduler books around them.
		n.Used = scheduling.Resources{CPU: h.CPU, MemoryMiB: h.MemoryMiB, GPUs: h.GPUs}
		n.Booked = h.Devices
		n.Ports = h.Ports
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

// gpuDevices are inv's GPU counts and device IDs per type. A type reported
// twice gets the devices of both, an ID only once: the count is that of
// distinct IDs, so two entries repeating indexes never double a node.
func gpuDevices(inv inventory.Inventory) (map[string]int, map[string][]string) {
	if len(inv.GPUs) == 0 {
		return nil, nil
	}
	counts, devices := map[string]int{}, map[string][]string{}
	seen := map[[2]string]bool{} // type, ID
	for _, g := range inv.GPUs {
		if g.Count < 0 || g.Count > scheduling.MaxGPUs {
			// Not numbered (that could be billions of IDs): ValidateNode
			// refuses the node until it reports a sane inventory.
			return map[string]int{g.Type: g.Count}, nil
		}
		for _, id := range g.DeviceIDs() {
			if k := [2]string{g.Type, id}; id != "" && !seen[k] {
				seen[k] = true
				devices[g.Type] = append(devices[g.Type], id)
			}
		}
		counts[g.Type] = len(devices[g.Type])
	}
	return counts, devices
}

// fixedPorts are the host ports of ps the service asks for by number; the
// rest the agent picks. Out-of-range ones are kept for ValidateJob to refuse.
func fixedPorts(ps []jobspec.Port) []int {
	var out []int
	for _, p := range ps {
		if p.Port != 0 {
			out = append(out, p.Port)
		}
	}
	return out
}

// loadJobs reads the next page of at most limit pending jobs of the queue
// not placed yet, in scheduling order after *after (nil: from the start),
// and moves *after to its last job; st.jobs gets them. Placed ones wait
// for their node to start them: under load most pending jobs do, and a
// pass after every submission would read them all again. more reports
// whether more jobs may follow.
func (st *state) loadJobs(ctx context.Context, c *ent.Client, tx *sql.Tx, dialectName string, qu *ent.Queue, after **cursor, limit int) (more bool, err error) {
	q := c.Job.Query().
		Where(job.QueueID(qu.ID), job.StatusEQ(job.StatusPending), job.HasServicesWith(unplaced())).
		Order(job.ByPriority(entsql.OrderDesc()), job.ByCreatedAt(), job.ByID()).
		Limit(limit).
		Select(job.FieldID, job.FieldPriority, job.FieldCreatedAt, job.FieldStatusReason, job.FieldKind)
	if st.traced {
		q.Select(job.FieldTraceParent)
	}
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
	svcs, err := loadServices(ctx, tx, dialectName, ids)
	if err != nil {
		return false, err
	}
	byJob := make(map[string][]scheduling.Service, len(pending))
	placed := map[string]bool{} // placed already, waiting for its node to start it
	for _, s := range svcs {
		if s.placed {
			placed[s.jobID] = true
			continue
		}
		byJob[s.jobID] = append(byJob[s.jobID], s.svc)
		names := st.services[s.jobID]
		if names == nil {
			names = map[string]string{}
			st.services[s.jobID] = names
		}
		names[s.svc.Name] = s.id
	}
	if err := markVenvs(ctx, c, pending, byJob); err != nil {
		return false, err
	}
	unplaced := make([]string, 0, len(pending))
	for _, j := range pending {
		if !placed[j.ID] {
			unplaced = append(unplaced, j.ID)
		}
	}
	pins, err := st.pins(ctx, c, qu.TenantID, unplaced)
	if err != nil {
		return false, err
	}
	for _, j := range pending {
		if placed[j.ID] {
			continue
		}
		sj := scheduling.Job{ID: j.ID, Priority: j.Priority, Submitted: j.CreatedAt, Services: byJob[j.ID], Pin: pins[j.ID]}
		st.reason[j.ID] = j.StatusReason
		if j.TraceParent != "" {
			if st.traceParent == nil {
				st.traceParent = map[string]string{}
			}
			st.traceParent[j.ID] = j.TraceParent
		}
		if _, ok := st.invalid[j.ID]; ok {
			continue // set by pins
		}
		if err := scheduling.ValidateJob(sj); err != nil {
			st.invalid[j.ID] = scheduling.InvalidPrefix + err.Error()
			continue
		}
		st.jobs = append(st.jobs, sj)
	}
	return more, nil
}

// markVenvs sets Venv on the services of functions and sandboxes that may
// run their blueprint as a virtual environment (jobspec.Service.Venv), so
// that nodes without containers may run them. Only those jobs' specs are
// read, and only when a service runs a blueprint image.
func markVenvs(ctx context.Context, c *ent.Client, pending []*ent.Job, byJob map[string][]scheduling.Service) error {
	var ids []string
	for _, j := range pending {
		if j.Kind != job.KindFUNCTION && j.Kind != job.KindSANDBOX {
			continue
		}
		if slices.ContainsFunc(byJob[j.ID], func(s scheduling.Service) bool { return jobspec.ReservedImage(s.Image) }) {
			ids = append(ids, j.ID)
		}
	}
	for part := range slices.Chunk(ids, chunk) {
		specs, err := c.Job.Query().Where(job.IDIn(part...)).Select(job.FieldID, job.FieldSpec).All(ctx)
		if err != nil {
			return fmt.Errorf("loading the specs of pending functions and sandboxes: %w", err)
		}
		for _, j := range specs {
			svcs := byJob[j.ID]
			for _, sp := range j.Spec.Services {
				if sp.Venv == nil {
					continue
				}
				if k := slices.IndexFunc(svcs, func(s scheduling.Service) bool { return s.Name == sp.Name }); k >= 0 {
					svcs[k].Venv = true
				}
			}
		}
	}
	return nil
}

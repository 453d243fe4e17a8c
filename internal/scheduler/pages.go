package scheduler

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/scheduling"
)

// A pass reads pending jobs in scheduling order a page at a time, and stops
// early once no node has room for even the smallest request waiting in the
// queue: then no later job can fit either. In a burst (thousands pending,
// nodes full, a pass after every job that ends) a pass costs a page and
// one aggregate query instead of rereading the whole queue; with room left
// it reads on, so backfill still sees every job. Jobs past the last page
// keep their reason, or get "waiting for free capacity" if they had none.
// Pages grow fourfold to maxPage: each costs a sort of the jobs left and a
// placement over every node, so a large queue with room reads few of them
// (their services are still read by IN lists of chunk IDs).
const (
	firstPage = 64
	maxPage   = 4096
)

// schedule places the queue's pending jobs on st.nodes page by page.
func (st *state) schedule(ctx context.Context, c *ent.Client, tx *sql.Tx, dialectName string, q *ent.Queue) ([]scheduling.Placement, map[string]scheduling.Reason, error) {
	var (
		placed   []scheduling.Placement
		waiting  = map[string]scheduling.Reason{}
		after    *cursor
		smallest *request
	)
	if err := st.loadNodeStorages(ctx, c, q.TenantID); err != nil {
		return nil, nil, err
	}
	for size := firstPage; ; size = min(size*4, maxPage) {
		more, err := st.loadJobs(ctx, c, tx, dialectName, q, &after, size)
		if err != nil {
			return nil, nil, err
		}
		if err := st.loadImages(ctx, c, q.TenantID); err != nil {
			return nil, nil, err
		}
		st.timing.add(&st.timing.read)
		res, w, err := scheduling.Schedule(st.jobs, st.nodes)
		st.timing.add(&st.timing.place)
		if err != nil {
			return nil, nil, fmt.Errorf("scheduling: %w", err) // load filters invalid input, so a bug
		}
		st.take(res)
		placed = append(placed, res...)
		maps.Copy(waiting, w)
		if !more {
			return placed, waiting, nil
		}
		// Room for the smallest request of this page is room for the
		// smallest of the queue (no larger): read on without asking.
		if page, ok := st.smallestLoaded(); ok && st.room(page) {
			continue
		}
		if smallest == nil {
			if smallest, err = smallestRequest(ctx, tx, q.ID); err != nil {
				return nil, nil, err
			}
		}
		if !st.room(*smallest) {
			// The note goes over every waiting job past the page: only when
			// the queue becomes backlogged. While it stays so, jobs
			// submitted to it take the note themselves (ReasonSubmitted).
			// On PostgreSQL a submission that read the queue before this
			// pass set the mark and commits after its note keeps
			// ReasonWaiting until a page reads it (SQLite's writers take
			// turns, reads included: none there).
			if !q.Backlogged {
				err := c.Job.Update().
					Where(job.QueueID(q.ID), job.StatusIn(jobstate.From(jobstate.Waiting)...), job.StatusReason(jobstate.ReasonWaiting), after.past()).
					SetStatusReason(jobstate.ReasonBacklogged(q.Name)).
					Exec(ctx)
				if err != nil {
					return nil, nil, fmt.Errorf("noting waiting jobs: %w", err)
				}
			}
			st.backlogged = true
			return placed, waiting, nil
		}
	}
}

// request is the least any waiting job asks for.
type request struct {
	CPU       float64
	MemoryMiB int64
}

// smallestRequest is the least CPU and the least memory any service of the
// queue's pending jobs asks for: every waiting job needs at least both.
// Each is the first entry of a partial index of pending jobs (their
// smallest_* columns, set at submission), so it costs the same however
// many wait. Jobs placed and not yet started count too: their requests
// can only lower the figure, and a lower one only reads on.
func smallestRequest(ctx context.Context, tx *sql.Tx, queueID string) (*request, error) {
	var cpu sql.NullFloat64
	var mem sql.NullInt64
	if err := tx.QueryRowContext(ctx, smallestRequestSQL, queueID).Scan(&cpu, &mem); err != nil {
		return nil, fmt.Errorf("finding the smallest waiting request: %w", err)
	}
	return &request{CPU: cpu.Float64, MemoryMiB: mem.Int64}, nil
}

// smallestRequestSQL is written as the indexes' own conditions and order,
// the status spelled out, not bound: the planners use a partial index only
// where the query's condition implies the index's, and the order leaves
// PostgreSQL's no way but the index's first entry, whatever its
// statistics say (TestSmallestRequestPlans).
var smallestRequestSQL = func() string {
	least := func(column string) string {
		return fmt.Sprintf(`(SELECT %[1]s FROM %[2]s WHERE %[3]s = $1 AND %[4]s = '%[5]s' AND %[1]s >= 0 ORDER BY %[1]s LIMIT 1)`,
			column, job.Table, job.FieldQueueID, job.FieldStatus, job.StatusPending)
	}
	return "SELECT " + least(job.FieldSmallestCPU) + ", " + least(job.FieldSmallestMemoryMib)
}()

// smallestLoaded is the smallest CPU and the smallest memory a service of
// st.jobs asks for: each is one of the requests smallestRequest takes the
// minimum of, so it is no smaller. false when st.jobs has no service.
func (st *state) smallestLoaded() (request, bool) {
	var r request
	found := false
	for _, j := range st.jobs {
		for _, s := range j.Services {
			if !found || s.CPU < r.CPU {
				r.CPU = s.CPU
			}
			if !found || s.MemoryMiB < r.MemoryMiB {
				r.MemoryMiB = s.MemoryMiB
			}
			found = true
		}
	}
	return r, found
}

// room reports whether some node has r free (CPU with a millicore of
// slack against rounding: stopping wrongly would strand a job, reading on
// costs a page).
func (st *state) room(r request) bool {
	for _, n := range st.nodes {
		if n.Capacity.CPU-n.Used.CPU+0.001 >= r.CPU && n.Capacity.MemoryMiB-n.Used.MemoryMiB >= r.MemoryMiB {
			return true
		}
	}
	return false
}

// take counts what the placements of the current page use on their nodes,
// devices and ports included, so the next page sees it.
func (st *state) take(res []scheduling.Placement) {
	if len(res) == 0 {
		return
	}
	byID := make(map[string]*scheduling.Job, len(st.jobs))
	for i := range st.jobs {
		byID[st.jobs[i].ID] = &st.jobs[i]
	}
	nodes := make(map[string]*scheduling.Node, len(st.nodes))
	for i := range st.nodes {
		nodes[st.nodes[i].ID] = &st.nodes[i]
	}
	for _, p := range res {
		n, j := nodes[p.NodeID], byID[p.JobID]
		for _, s := range j.Services {
			n.Used.CPU += s.CPU
			n.Used.MemoryMiB += s.MemoryMiB
			n.Ports = append(n.Ports, s.Ports...)
			if s.GPUs > 0 {
				// Fresh maps: the page's input must not change under it.
				typ := p.GPUType[s.Name]
				gpus := maps.Clone(n.Used.GPUs)
				if gpus == nil {
					gpus = map[string]int{}
				}
				gpus[typ] += s.GPUs
				n.Used.GPUs = gpus
				booked := maps.Clone(n.Booked)
				if booked == nil {
					booked = map[string][]string{}
				}
				booked[typ] = append(slices.Clip(booked[typ]), p.Devices[s.Name]...)
				n.Booked = booked
			}
		}
	}
}

package dbstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"entgo.io/ent/dialect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/scheduling"
)

// pendingKind classifies a pending job's reason into a few kinds, in SQL
// so that one GROUP BY counts them (by position: PostgreSQL would read a
// name as the jobs' own kind column). The classes are the scheduler's
// (scheduling.ReasonClasses, tested against its texts); a text none
// matches counts as "other", never as a label of its own.
var pendingKind = func() string {
	var b strings.Builder
	b.WriteString("CASE WHEN j.status_reason = '' OR j.status_reason = ? THEN 'unscheduled'")
	for _, c := range scheduling.ReasonClasses {
		// Labels and patterns are constants of ours, never input.
		fmt.Fprintf(&b, " WHEN j.status_reason LIKE '%s' THEN '%s'", c.Like, c.Label)
	}
	b.WriteString(" ELSE 'other' END")
	return b.String()
}()

// collectJobs sends levers9_jobs and levers9_jobs_pending. The jobs are
// looked up per queue by the (queue_id, status) index, never scanned: the
// table holds the whole history. CROSS JOIN makes SQLite take the queues
// first (PostgreSQL plans it as a join either way).
func (c *Collector) collectJobs(ctx context.Context, tenants map[string]string, ch chan<- prometheus.Metric) error {
	byState := newSeries()
	err := c.query(ctx, func(scan func(...any) error) error {
		var tenant, queue, state string
		var n float64
		if err := scan(&tenant, &queue, &state, &n); err != nil {
			return err
		}
		byState.add(n, c.labels(tenants, tenant, queue, state)...)
		return nil
	}, `SELECT j.tenant_id, q.name, j.status, COUNT(*) FROM queues q CROSS JOIN jobs j
		WHERE j.queue_id = q.id AND j.status IN ('PENDING', 'RUNNING') GROUP BY j.tenant_id, q.name, j.status`)
	if err != nil {
		return fmt.Errorf("counting jobs: %w", err)
	}
	byReason := newSeries()
	err = c.query(ctx, func(scan func(...any) error) error {
		var tenant, queue, kind string
		var n float64
		if err := scan(&tenant, &queue, &kind, &n); err != nil {
			return err
		}
		byReason.add(n, c.labels(tenants, tenant, queue, kind)...)
		return nil
	}, `SELECT j.tenant_id, q.name, `+pendingKind+` AS reason_kind, COUNT(*) FROM queues q CROSS JOIN jobs j
		WHERE j.queue_id = q.id AND j.status = 'PENDING' GROUP BY 1, 2, 3`, jobstate.ReasonWaiting)
	if err != nil {
		return fmt.Errorf("counting pending jobs by reason: %w", err)
	}
	byState.capped(maxQueues).emit(ch, c.jobs)
	byReason.capped(maxQueues).emit(ch, c.pending)
	return nil
}

// collectNodes sends levers9_nodes.
func (c *Collector) collectNodes(ctx context.Context, tenants map[string]string, ch chan<- prometheus.Metric) error {
	s := newSeries()
	err := c.query(ctx, func(scan func(...any) error) error {
		var tenant, state string
		var n float64
		if err := scan(&tenant, &state, &n); err != nil {
			return err
		}
		s.add(n, c.labels(tenants, tenant, strings.ToLower(state))...)
		return nil
	}, `SELECT tenant_id, status, COUNT(*) FROM nodes GROUP BY tenant_id, status`)
	if err != nil {
		return fmt.Errorf("counting nodes: %w", err)
	}
	s.emit(ch, c.nodes)
	return nil
}

// collectGPUs sends levers9_gpus_booked and levers9_gpus_free over online
// nodes (an offline node's GPUs are neither: it takes no jobs): what
// services placed there hold, by node and type in one GROUP BY, against
// each node's inventory.
func (c *Collector) collectGPUs(ctx context.Context, tenants map[string]string, ch chan<- prometheus.Metric) error {
	type nodeGPUs struct {
		tenant string
		have   map[string]int
	}
	online := map[string]*nodeGPUs{}
	err := c.query(ctx, func(scan func(...any) error) error {
		var id, tenant string
		var raw []byte
		if err := scan(&id, &tenant, &raw); err != nil {
			return err
		}
		var inv inventory.Inventory
		if err := json.Unmarshal(raw, &inv); err != nil {
			return fmt.Errorf("node %s's inventory: %w", id, err)
		}
		n := &nodeGPUs{tenant: tenant, have: map[string]int{}}
		for _, g := range inv.GPUs {
			n.have[g.Type] += g.Count
		}
		online[id] = n
		return nil
	}, `SELECT id, tenant_id, inventory FROM nodes WHERE status = 'ONLINE'`)
	if err != nil {
		return fmt.Errorf("reading node inventories: %w", err)
	}
	held := map[string]map[string]int{} // node → type → GPUs
	err = c.query(ctx, func(scan func(...any) error) error {
		var nodeID, typ string
		var n int
		if err := scan(&nodeID, &typ, &n); err != nil {
			return err
		}
		if held[nodeID] == nil {
			held[nodeID] = map[string]int{}
		}
		held[nodeID][typ] += n
		return nil
	}, `SELECT s.node_id, s.gpu_type, SUM(s.gpus) FROM services s JOIN nodes n ON n.id = s.node_id
		WHERE n.status = 'ONLINE' AND s.status IN ('PENDING', 'RUNNING') AND s.gpus > 0
		GROUP BY s.node_id, s.gpu_type`)
	if err != nil {
		return fmt.Errorf("counting booked GPUs: %w", err)
	}
	booked, free := newSeries(), newSeries()
	for id, n := range online {
		for typ, have := range n.have {
			free.add(float64(max(have-held[id][typ], 0)), c.labels(tenants, n.tenant, typ)...)
			booked.add(0, c.labels(tenants, n.tenant, typ)...) // a type nothing holds shows 0 booked
		}
		for typ, h := range held[id] {
			booked.add(float64(h), c.labels(tenants, n.tenant, typ)...)
		}
	}
	booked.capped(maxGPUTypes).emit(ch, c.gpusBooked)
	free.capped(maxGPUTypes).emit(ch, c.gpusFree)
	return nil
}

// collectRiver sends levers9_river_jobs. River's queue names are this
// code's, but capped all the same.
func (c *Collector) collectRiver(ctx context.Context, ch chan<- prometheus.Metric) error {
	s := newSeries()
	err := c.query(ctx, func(scan func(...any) error) error {
		var queue, state string
		var n float64
		if err := scan(&queue, &state, &n); err != nil {
			return err
		}
		s.add(n, queue, state)
		return nil
	}, `SELECT queue, state, COUNT(*) FROM river_job GROUP BY queue, state`)
	if err != nil {
		return fmt.Errorf("counting River jobs: %w", err)
	}
	s.capped(20).emit(ch, c.river)
	return nil
}

// labels are values followed by the tenant's slug when the label is on.
func (c *Collector) labels(tenants map[string]string, tenantID string, values ...string) []string {
	if !c.cfg.TenantLabel {
		return values
	}
	return append(values, tenantOf(tenants, tenantID))
}

// query runs query with args (? placeholders, rewritten for PostgreSQL)
// and calls row for each row.
func (c *Collector) query(ctx context.Context, row func(scan func(...any) error) error, query string, args ...any) error {
	rows, err := c.db.SQL.QueryContext(ctx, c.rebind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rebind turns ? placeholders into PostgreSQL's $1, $2, ….
func (c *Collector) rebind(query string) string {
	if c.db.Dialect != dialect.Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Package dbstate is the Prometheus collector of levers9's state as the
// database holds it: jobs by queue and state, why pending jobs wait,
// nodes, GPUs booked and free, River's queue. It queries at scrape time
// (one GROUP BY per family, within Timeout), so nothing on the hot path
// keeps these numbers, and every replica sharing a database reports the
// same values: aggregate them across replicas with max, not sum.
package dbstate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levers9/levers9/internal/database"
)

// DefaultTimeout bounds one scrape's queries: a scrape that cannot finish
// in it reports an error instead of holding database connections (SQLite
// has one) while Prometheus times out anyway.
const DefaultTimeout = 5 * time.Second

// Label value caps: queue names and GPU types are chosen by tenants (a
// queue, an agent's declared GPUs), so a hostile tenant could otherwise
// create a series per value. Past the cap, the smallest fold into "other".
const (
	maxQueues   = 100
	maxGPUTypes = 50
	other       = "other"
)

// The names of the families, as Names lists them.
const (
	nameJobs        = "levers9_jobs"
	namePending     = "levers9_jobs_pending"
	nameNodes       = "levers9_nodes"
	nameGpusBooked  = "levers9_gpus_booked"
	nameGpusFree    = "levers9_gpus_free"
	nameRiver       = "levers9_river_jobs"
	nameSubscribers = "levers9_log_subscribers"
)

// Names are the names of the families a Collector sends.
func Names() []string {
	return []string{nameJobs, namePending, nameNodes, nameGpusBooked, nameGpusFree, nameRiver, nameSubscribers}
}

// Collector is a prometheus.Collector of the database's state.
type Collector struct {
	db  *database.DB
	log *slog.Logger
	cfg Config

	jobs, pending, nodes, gpusBooked, gpusFree, river, subscribers *prometheus.Desc
}

// Config says what a Collector reads and how it labels.
type Config struct {
	// TenantLabel adds a tenant label (the tenant's slug) to the families
	// that have one (jobs, pending jobs, nodes, GPUs). Off by default: an
	// operator with many tenants asks for it knowing the series it costs.
	TenantLabel bool
	// Subscribers, when set, is the number of log and event followers on
	// this server (joblog.Service.Running).
	Subscribers func() int64
	// Timeout bounds one scrape's queries; 0: DefaultTimeout.
	Timeout time.Duration
}

// New returns the collector of db's state.
func New(db *database.DB, log *slog.Logger, cfg Config) *Collector {
	var t []string
	if cfg.TenantLabel {
		t = []string{"tenant"}
	}
	l := func(names ...string) []string { return append(names, t...) }
	return &Collector{
		db: db, log: log, cfg: cfg,
		jobs: prometheus.NewDesc(nameJobs,
			"Jobs that are PENDING or RUNNING, by queue and state.", l("queue", "state"), nil),
		pending: prometheus.NewDesc(namePending,
			"Pending jobs by queue and the kind of reason they wait: unscheduled, starting, capacity, too_large, no_nodes, node_offline, no_containers, invalid, other.",
			l("queue", "reason"), nil),
		nodes: prometheus.NewDesc(nameNodes,
			"Nodes by state (online, offline).", l("state"), nil),
		gpusBooked: prometheus.NewDesc(nameGpusBooked,
			"GPUs of online nodes held by placed or running services, by GPU type.", l("type"), nil),
		gpusFree: prometheus.NewDesc(nameGpusFree,
			"GPUs of online nodes held by nothing, by GPU type.", l("type"), nil),
		river: prometheus.NewDesc(nameRiver,
			"River's background jobs (scheduling, metering, liveness, tasks) by River queue and state.", []string{"queue", "state"}, nil),
		subscribers: prometheus.NewDesc(nameSubscribers,
			"Log and job event followers this server feeds now.", nil, nil),
	}
}

// Describe sends the descriptors of every family.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.pending, c.nodes, c.gpusBooked, c.gpusFree, c.river, c.subscribers} {
		ch <- d
	}
}

// Collect queries each family. A family whose query fails is reported as
// an invalid metric (a scrape error the handler logs and, with
// ContinueOnError, serves the other families around), never a panic.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tenants, err := c.tenantSlugs(ctx)
	if err != nil {
		c.fail(ch, err, c.jobs, c.pending, c.nodes, c.gpusBooked, c.gpusFree)
	} else {
		for _, f := range []struct {
			run   func(context.Context, map[string]string, chan<- prometheus.Metric) error
			descs []*prometheus.Desc
		}{
			{c.collectJobs, []*prometheus.Desc{c.jobs, c.pending}},
			{c.collectNodes, []*prometheus.Desc{c.nodes}},
			{c.collectGPUs, []*prometheus.Desc{c.gpusBooked, c.gpusFree}},
		} {
			if err := f.run(ctx, tenants, ch); err != nil {
				c.fail(ch, err, f.descs...)
			}
		}
	}
	if err := c.collectRiver(ctx, ch); err != nil {
		c.fail(ch, err, c.river)
	}
	if c.cfg.Subscribers != nil {
		ch <- prometheus.MustNewConstMetric(c.subscribers, prometheus.GaugeValue, float64(c.cfg.Subscribers()))
	}
}

func (c *Collector) fail(ch chan<- prometheus.Metric, err error, descs ...*prometheus.Desc) {
	c.log.Warn("collecting metrics from the database", "err", err)
	for _, d := range descs {
		ch <- prometheus.NewInvalidMetric(d, fmt.Errorf("querying the database: %w", err))
	}
}

// tenantSlugs maps tenant IDs to slugs when the tenant label is on.
func (c *Collector) tenantSlugs(ctx context.Context) (map[string]string, error) {
	if !c.cfg.TenantLabel {
		return nil, nil
	}
	rows, err := c.db.SQL.QueryContext(ctx, `SELECT id, slug FROM tenants`)
	if err != nil {
		return nil, fmt.Errorf("reading tenants: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, slug string
		if err := rows.Scan(&id, &slug); err != nil {
			return nil, fmt.Errorf("reading tenants: %w", err)
		}
		out[id] = slug
	}
	return out, rows.Err()
}

// tenantOf is the tenant label value of tenant id: its slug, or "unknown"
// for a tenant made after the slugs were read.
func tenantOf(tenants map[string]string, id string) string {
	if s, ok := tenants[id]; ok {
		return s
	}
	return "unknown"
}

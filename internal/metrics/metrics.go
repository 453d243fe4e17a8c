// Package metrics defines every Prometheus metric levers9 exports, in one
// place, so that names are checked once (the Grafana dashboard's test reads
// them from Names) and nobody registers a metric twice.
//
// Two kinds of metric live here:
//
//   - Events (counters and histograms: a job started, a scheduling pass
//     ran, a log line was stored) are package-level collectors registered
//     once, at init, in the package's own registry. Instrumented code calls
//     them directly (one line, a lock-free add, no wiring through every
//     service), and no number of servers in one process (tests start many)
//     can register them twice. A process runs one server in production; in
//     tests they add up, which is why tests compare before and after.
//   - State (jobs by queue and state, nodes, GPUs, River's queue) comes from
//     the database at scrape time through a Collector that each server
//     builds for its own database and registers in a registry of its own
//     (see Handler): one GROUP BY per family, nothing on the hot path, and
//     every replica reports the same numbers (aggregate them with max, not
//     sum).
//
// Labels are bounded: no job, user or node IDs, ever. Queue and GPU type
// values come from tenants, so the collector folds all but the largest
// into "other" (maxLabelValues); GraphQL operations are named by their root
// fields, never by the client's free-text operation name.
package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Buckets of the latency histograms, in seconds: from a fast placement on
// SQLite (milliseconds) to a job waiting an hour for a GPU.
var (
	fastBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	waitBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600}
)

// Event metrics. Their label values are constants of this code base (kinds,
// codes, directions) or bounded by the schema (root field names).
var (
	// JobStartWait is the time from a job's submission to its RUNNING, by
	// job kind (JOB, FUNCTION, BUILD, SANDBOX). Its _count is job starts.
	JobStartWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    named("levers9_job_start_wait_seconds"),
		Help:    "Seconds from a job's submission to all of its services running, by job kind; _count counts job starts.",
		Buckets: waitBuckets,
	}, []string{"kind"})
	// JobsEnded counts jobs that ended, by end state (COMPLETE, ERROR,
	// CANCELLED): the finished side of levers9_jobs, which counts only the
	// PENDING and RUNNING ones (the database's whole history would be a
	// full count per scrape).
	JobsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: named("levers9_jobs_ended_total"),
		Help: "Jobs that ended, by end state (COMPLETE, ERROR, CANCELLED).",
	}, []string{"state"})
	// SchedulingPass is the duration of one scheduling pass over a queue.
	SchedulingPass = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    named("levers9_scheduling_pass_seconds"),
		Help:    "Seconds one scheduling pass over a queue took (reading, placing, writing), failed passes included.",
		Buckets: fastBuckets,
	})
	// Placements counts jobs placed on nodes by scheduling passes.
	Placements = prometheus.NewCounter(prometheus.CounterOpts{
		Name: named("levers9_scheduling_placements_total"),
		Help: "Jobs placed on a node by scheduling passes.",
	})
	// AgentConnections is the number of agent tunnels this server holds.
	AgentConnections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: named("levers9_agent_connections"),
		Help: "Agent tunnels (node connections) this server holds now.",
	})
	// AgentConnects counts authenticated agent tunnels opened, by kind:
	// "first" (a node's first connection after joining) or "reconnect". A
	// reconnect rate well above the number of nodes means agents keep
	// losing their tunnels.
	AgentConnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: named("levers9_agent_connects_total"),
		Help: "Agent tunnels opened, by kind: first (a node's first connection after joining) or reconnect.",
	}, []string{"kind"})
	// MeterTick is the duration of one metering tick over running jobs.
	MeterTick = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    named("levers9_meter_tick_seconds"),
		Help:    "Seconds one metering tick over the running jobs took.",
		Buckets: fastBuckets,
	})
	// ChargesWritten counts charges the server wrote, by kind (START,
	// COMPUTE, STORAGE, ADJUSTMENT).
	ChargesWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: named("levers9_charges_written_total"),
		Help: "Charges (ledger rows) written, by kind.",
	}, []string{"kind"})
	// TokensCharged counts the tokens of those charges, by kind.
	TokensCharged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: named("levers9_tokens_charged_total"),
		Help: "Tokens charged, by charge kind (negative adjustments are counted in levers9_tokens_refunded_total).",
	}, []string{"kind"})
	// TokensRefunded counts tokens given back by adjustments.
	TokensRefunded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: named("levers9_tokens_refunded_total"),
		Help: "Tokens given back by adjustment charges (a lost node's minutes after it was last seen).",
	})
	// LogLinesIngested counts job log lines stored.
	LogLinesIngested = prometheus.NewCounter(prometheus.CounterOpts{
		Name: named("levers9_log_lines_ingested_total"),
		Help: "Job log lines received from agents and stored.",
	})
	// LogLinesDelivered counts job log lines sent to followers.
	LogLinesDelivered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: named("levers9_log_lines_delivered_total"),
		Help: "Job log lines sent to followers (subscriptions, levers9 logs -f, the dashboard).",
	})
	// GraphQLOperations counts GraphQL operations by root field, type and
	// the code of their first error ("" when none).
	GraphQLOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: named("levers9_graphql_operations_total"),
		Help: "GraphQL operations by root field(s), type (query, mutation, subscription) and error code (OK when none).",
	}, []string{"operation", "type", "code"})
	// GraphQLDuration is the time to answer a GraphQL operation (for a
	// subscription, to its first answer).
	GraphQLDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    named("levers9_graphql_operation_seconds"),
		Help:    "Seconds to answer a GraphQL operation (a subscription: its first answer), by root field(s) and type.",
		Buckets: fastBuckets,
	}, []string{"operation", "type"})
	// DatabaseStatements counts the statements this server sent to its
	// database: what each job costs the database, the figure behind
	// BenchmarkThroughput's statements per job.
	DatabaseStatements = prometheus.NewCounter(prometheus.CounterOpts{
		Name: named("levers9_database_statements_total"),
		Help: "SQL statements this server ran on its database (queries and writes; not BEGIN, COMMIT or ROLLBACK).",
	})
	// FilesBytes counts bytes through the files API: in (uploads) and out
	// (downloads).
	FilesBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: named("levers9_files_bytes_total"),
		Help: "Bytes through the files API (/files/), by direction: in (uploads) or out (downloads).",
	}, []string{"direction"})
)

// names are the event metrics' names, as defined (see Names).
var names []string

// named records name among the event metrics' names.
func named(name string) string {
	names = append(names, name)
	return name
}

// Names are the names of the event metrics (a histogram's series add
// _bucket, _sum and _count); dbstate.Names lists the database state's.
func Names() []string { return slices.Clone(names) }

// events is the registry of the event metrics and of the Go runtime's and
// process's own, filled once per process.
var events = prometheus.NewRegistry()

func init() {
	events.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		JobStartWait, JobsEnded, SchedulingPass, Placements, AgentConnections, AgentConnects,
		MeterTick, ChargesWritten, TokensCharged, TokensRefunded,
		LogLinesIngested, LogLinesDelivered, GraphQLOperations, GraphQLDuration, FilesBytes, DatabaseStatements,
	)
	// Series that exist before their first event, so that a dashboard and
	// rate() see zero rather than nothing.
	for _, k := range []string{"first", "reconnect"} {
		AgentConnects.WithLabelValues(k)
	}
	for _, d := range []string{"in", "out"} {
		FilesBytes.WithLabelValues(d)
	}
	for _, st := range []string{"COMPLETE", "ERROR", "CANCELLED"} {
		JobsEnded.WithLabelValues(st)
	}
	for _, k := range []string{"START", "COMPUTE", "STORAGE"} {
		ChargesWritten.WithLabelValues(k)
		TokensCharged.WithLabelValues(k)
	}
}

// Events is the registry of the event metrics, to serve beside a server's
// own (scrape.Handler).
func Events() prometheus.Gatherer { return events }

// ObserveSince observes the seconds since start: defer it at the top of
// the timed function (`defer metrics.ObserveSince(metrics.X, time.Now())`).
func ObserveSince(o prometheus.Observer, start time.Time) { o.Observe(time.Since(start).Seconds()) }

// AgentConnected counts an agent tunnel opened; again says the node had
// connected before.
func AgentConnected(again bool) {
	if again {
		AgentConnects.WithLabelValues("reconnect").Inc()
	} else {
		AgentConnects.WithLabelValues("first").Inc()
	}
}

// Charged counts n charges of kind written, together worth tokens
// (negative: given back).
func Charged(kind string, n int, tokens int64) {
	ChargesWritten.WithLabelValues(kind).Add(float64(n))
	if tokens >= 0 {
		TokensCharged.WithLabelValues(kind).Add(float64(tokens))
	} else {
		TokensRefunded.Add(float64(-tokens))
	}
}

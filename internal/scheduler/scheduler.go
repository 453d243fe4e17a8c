package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/scheduling"
	"github.com/levers9/levers9/internal/viewer"
)

// Service places the pending jobs of a queue on its online nodes.
type Service struct {
	DB *database.DB
	// Bus, when set, wakes the replica holding a node's tunnel after work
	// was placed on the node.
	Bus *notify.Bus
	Log *slog.Logger
	Now func() time.Time
	// Tracer, when set, records each placement in its job's trace (see
	// tracePlacements); nil: off.
	Tracer trace.Tracer
}

// ScheduleQueue runs one scheduling pass over queue queueID and returns how
// many jobs it placed. A queue that no longer exists places nothing.
func (s *Service) ScheduleQueue(ctx context.Context, queueID string) (placed int, err error) {
	sys := viewer.SystemContext(ctx)
	defer metrics.ObserveSince(metrics.SchedulingPass, time.Now())
	start := s.now()
	var touched []string // nodes that received work
	var took timing
	var traced placements
	err = s.DB.InTx(sys, func(tx *database.Tx) error {
		if s.DB.Dialect == dialect.Postgres {
			// The reads by lists of IDs repeat one statement text; after five
			// runs PostgreSQL would switch to a generic plan, a sequential
			// scan testing hundreds of IDs per row. Custom plans look the IDs
			// up.
			if _, err := tx.SQL.ExecContext(sys, "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
				return fmt.Errorf("setting plan cache mode: %w", err)
			}
		}
		// A queue whose pending jobs are all placed (waiting for their
		// node to start them) or without any has nothing to place: its
		// nodes, their services and storages go unread. Every job's end
		// asks for a pass, which usually finds the jobs submitted since
		// placed by their own passes.
		q, err := tx.Ent.Queue.Query().
			Where(queue.ID(queueID), queue.HasJobsWith(jobstate.In(job.StatusPending), job.HasServicesWith(unplaced()))).
			Only(sys)
		if ent.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("loading queue: %w", err)
		}
		st := newState()
		st.traced = s.Tracer != nil
		st.timing.start()
		if err := st.loadNodes(sys, tx.Ent, s.DB.Dialect, q.ID); err != nil {
			return err
		}
		res, waiting, err := st.schedule(sys, tx.Ent, tx.SQL, s.DB.Dialect, q)
		if err != nil {
			return err
		}
		st.timing.add(&st.timing.read)
		if err := st.write(sys, tx.SQL, s.DB.Dialect, q.Name, res, waiting, s.now()); err != nil {
			return err
		}
		if st.backlogged != q.Backlogged {
			// Written only when it changes: a pass over a backlog writes no
			// queue row.
			mark := fmt.Sprintf("UPDATE %s SET %s = $1 WHERE %s = $2", queue.Table, queue.FieldBacklogged, queue.FieldID)
			if _, err := tx.SQL.ExecContext(sys, mark, st.backlogged, q.ID); err != nil {
				return fmt.Errorf("marking queue %s backlogged=%t: %w", q.Name, st.backlogged, err)
			}
		}
		st.timing.add(&st.timing.written)
		took = st.timing
		placed, touched = len(res), touchedNodes(res)
		if st.traced {
			traced = placements{queueID: q.ID, placed: res, traceParent: st.traceParent}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("scheduling queue %s: %w", queueID, err)
	}
	s.wake(ctx, touched)
	metrics.Placements.Add(float64(placed))
	s.tracePlacements(ctx, traced, start)
	s.log().Debug("scheduled queue", "queue", queueID, "placed", placed, "nodes", len(touched), "took", s.now().Sub(start),
		"reading", took.read, "placing", took.place, "writing", took.written)
	return placed, nil
}

// wake tells the replicas holding the nodes' tunnels to start the work. A
// lost signal only delays: the agent resyncs from the database.
func (s *Service) wake(ctx context.Context, nodes []string) {
	if s.Bus == nil {
		return
	}
	signals := make([]notify.Signal, len(nodes))
	for i, id := range nodes {
		signals[i] = notify.Signal{Topic: notify.TopicNode, Key: id}
	}
	if err := s.Bus.PublishMany(ctx, signals...); err != nil {
		s.log().Warn("waking nodes", "nodes", len(nodes), "err", err)
	}
}

func touchedNodes(res []scheduling.Placement) []string {
	seen := map[string]bool{}
	var ids []string
	for _, p := range res {
		if !seen[p.NodeID] {
			seen[p.NodeID] = true
			ids = append(ids, p.NodeID)
		}
	}
	return ids
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// unplaced is a service no pass placed yet (see unplacedSQL).
func unplaced() predicate.Service {
	return func(s *entsql.Selector) {
		s.Where(entsql.ExprP(unplacedSQL(s.C(service.FieldNodeID))))
	}
}

// unplacedSQL holds for a service without a node, by its node_id column:
// a pass writes the node where it has none. Written with coalesce, not
// "IS NULL OR = ”", which the (node_id, status) index could answer: the
// planners then scanned every unplaced service, or (PostgreSQL, on stale
// statistics) intersected that index with a job's services, instead of
// looking up the IDs or the job's services at hand.
func unplacedSQL(column string) string {
	return fmt.Sprintf("coalesce(%s, '') = ''", column)
}

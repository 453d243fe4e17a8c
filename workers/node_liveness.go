package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/nodes"
)

// NodeLivenessArgs asks for one liveness sweep: silent nodes go offline,
// jobs of nodes gone past the grace fail or are requeued. River enqueues
// it every few seconds on the leader replica; running it twice is harmless.
type NodeLivenessArgs struct{}

// Kind of the NodeLivenessArgs.
func (NodeLivenessArgs) Kind() string { return "node_liveness" }

// NodeLivenessWorker runs sweeps.
type NodeLivenessWorker struct {
	river.WorkerDefaults[NodeLivenessArgs]
	Liveness *nodes.Liveness
	Log      *slog.Logger
}

// Work runs one sweep.
func (w *NodeLivenessWorker) Work(ctx context.Context, _ *river.Job[NodeLivenessArgs]) error {
	res, err := w.Liveness.Sweep(ctx)
	if err != nil {
		return fmt.Errorf("node liveness: %w", err)
	}
	if res != (nodes.SweepResult{}) {
		w.Log.Info("node liveness", "offline", res.Offline, "failed", res.Failed, "requeued", res.Requeued)
	}
	return nil
}

// Timeout keeps a stuck sweep from blocking the next ones.
func (w *NodeLivenessWorker) Timeout(*river.Job[NodeLivenessArgs]) time.Duration { return time.Minute }

// livenessEvery is how often sweeps run: often enough that a node goes
// offline soon after its TTL (within a third of it, at most 10 s), never
// more than once a second.
func livenessEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/3, time.Second), 10*time.Second)
}

package tunnel

import (
	"context"

	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

// logsMany stores the lines of the current attempt of jobs placed on this
// node, from several messages in the order the agent sent them, in one
// transaction (group commit: the read loop hands over what it has
// queued, so a chatty job pays a commit per group, not per message).
// Followers are woken once per job after the commit. Lines of a message
// naming a service this node does not run for the attempt are ignored,
// as one message alone is; a database error stores none of them and the
// agent resends them all (stored once: lines are keyed by seq).
//
// The ownership check is not cached across messages: it is one indexed
// query per service per message (a message carries up to ~10,000 lines),
// and its answer can change within the session without the session
// seeing it (a job requeued before it started keeps its attempt but
// leaves the node).
func (s *session) logsMany(ctx context.Context, ms []wire.Logs) error {
	batches := make([]joblog.Batch, 0, len(ms))
	var jobs []string
	seen := map[string]bool{}
	for _, m := range ms {
		if len(m.Lines) == 0 {
			continue
		}
		ok, err := s.ownsLines(ctx, m)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		batches = append(batches, joblog.Batch{JobID: m.JobID, Attempt: max(m.Attempt, 1), Lines: m.Lines})
		if !seen[m.JobID] {
			seen[m.JobID] = true
			jobs = append(jobs, m.JobID)
		}
	}
	if len(batches) == 0 {
		return nil
	}
	if err := s.srv.Logs.AppendAll(ctx, batches); err != nil {
		return err
	}
	if s.srv.Bus != nil {
		for _, id := range jobs {
			if err := s.srv.Bus.Publish(ctx, notify.TopicJob, id); err != nil {
				s.log.Warn("signalling new log lines", "job", id, "err", err)
			}
		}
	}
	return nil
}

// ownsLines reports whether this node runs, for m's attempt, every
// service m's lines name, not only the first line's; or ran them, for an
// attempt requeued from it when it was lost: its agent froze that run,
// kept its output and sends it once back in touch (jobs.RanAttempt).
func (s *session) ownsLines(ctx context.Context, m wire.Logs) (bool, error) {
	checked := map[string]bool{}
	for _, l := range m.Lines {
		if checked[l.Service] {
			continue
		}
		checked[l.Service] = true
		ref := s.ref(m.JobID, m.Attempt, l.Service)
		svc, err := s.srv.Jobs.OwnService(ctx, ref)
		if err != nil {
			return false, err
		}
		if svc != nil {
			continue
		}
		if ran, err := s.srv.Jobs.RanAttempt(ctx, ref); err != nil || !ran {
			return false, err
		}
	}
	return true, nil
}

// maxLogsBatch bounds the log messages committed together. Each carries
// up to ~10,000 lines, so the commit is paid for already; more would hold
// SQLite's one connection from everyone else for longer.
const maxLogsBatch = 4

// applyLogs stores first, a wire.Logs, with the log messages already
// queued in in right after it, in one transaction, then acknowledges
// them; it returns the first other message it took (nil: none). The read
// loop calls it for a wire.Logs as applyReports for state reports.
func (s *session) applyLogs(ctx context.Context, first inbound, in *inbox) (*inbound, error) {
	batch, next := in.takeQueued([]inbound{first}, maxLogsBatch, isLogs)
	ms := make([]wire.Logs, len(batch))
	var last uint64
	for i, b := range batch {
		ms[i], last = b.m.(wire.Logs), max(last, b.seq)
	}
	if err := s.logsMany(ctx, ms); err != nil {
		return next, err
	}
	// An ack covers every message up to it: the highest says all.
	return next, s.ack(ctx, last)
}

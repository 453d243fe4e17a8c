package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// idleWarning starts the reason of the warning event an idle job gets
// before it is stopped. The event keeps the job's status (RUNNING), whose
// only other job event is "running": the prefix tells warnings apart.
const idleWarning = "idle for "

// idleBatch is how many candidate jobs one sweep step reads, with their
// warnings: a sweep over many interactive jobs is a few queries per batch.
const idleBatch = 500

// IdleWarnAhead is how long before its idle stop a job is warned: 5
// minutes, or a fifth of a shorter timeout.
func IdleWarnAhead(timeout time.Duration) time.Duration {
	return min(5*time.Minute, timeout/5)
}

// IdleSweep looks at the running interactive jobs of queues with an idle
// timeout, at now. A job is idle since it started or since its last
// activity (MarkActive), whichever is later. Within IdleWarnAhead of its
// timeout it gets one warning event (one per idle period: activity after
// it calls for a new one); past its timeout, and once its warning has been
// up IdleWarnAhead, it is stopped (IdleStopped). So a job is never stopped
// unwarned, even after the sweeps paused or the timeout was lowered: it
// gets its notice first. Batch jobs never idle-stop. A second sweep right
// after the first finds nothing more to do.
func (s *Service) IdleSweep(ctx context.Context, now time.Time) (warned, stopped int, err error) {
	sys := viewer.SystemContext(ctx)
	queues, err := s.DB.Ent.Queue.Query().Where(queue.IdleTimeoutSecondsGT(0)).
		Select(queue.FieldID, queue.FieldIdleTimeoutSeconds).All(sys)
	if err != nil {
		return 0, 0, fmt.Errorf("listing queues with an idle timeout: %w", err)
	}
	if len(queues) == 0 {
		return 0, 0, nil
	}
	timeouts := make(map[string]time.Duration, len(queues))
	ids := make([]string, len(queues))
	for i, q := range queues {
		timeouts[q.ID] = time.Duration(q.IdleTimeoutSeconds) * time.Second
		ids[i] = q.ID
	}
	after := ""
	for {
		// Keyset pages by job ID; the (queue_id, status) index finds them.
		batch, err := s.DB.Ent.Job.Query().
			Where(job.StatusEQ(job.StatusRunning), job.Interactive(true), job.QueueIDIn(ids...), job.IDGT(after)).
			Select(job.FieldID, job.FieldTenantID, job.FieldEnvironmentID, job.FieldQueueID,
				job.FieldStartedAt, job.FieldLastActiveAt).
			Order(ent.Asc(job.FieldID)).Limit(idleBatch).All(sys)
		if err != nil {
			return warned, stopped, fmt.Errorf("listing running interactive jobs: %w", err)
		}
		if len(batch) == 0 {
			return warned, stopped, nil
		}
		after = batch[len(batch)-1].ID
		w, st, err := s.idleBatch(ctx, batch, timeouts, now)
		warned += w
		stopped += st
		if err != nil {
			return warned, stopped, err
		}
	}
}

// idleBatch warns or stops the idle jobs of one page of candidates.
func (s *Service) idleBatch(ctx context.Context, batch []*ent.Job, timeouts map[string]time.Duration, now time.Time) (warned, stopped int, err error) {
	sys := viewer.SystemContext(ctx)
	since := make(map[string]time.Time, len(batch))
	ids := make([]string, len(batch))
	oldest := now
	for i, j := range batch {
		since[j.ID] = lastActive(j)
		ids[i] = j.ID
		oldest = minTime(oldest, since[j.ID])
	}
	// Only warnings of the current idle periods count; older ones were
	// answered by activity.
	evs, err := s.DB.Ent.JobEvent.Query().
		Where(jobevent.JobIDIn(ids...), jobevent.StatusEQ(jobevent.StatusRunning), jobevent.Service(""),
			jobevent.ReasonHasPrefix(idleWarning), jobevent.AtGTE(oldest)).
		Select(jobevent.FieldJobID, jobevent.FieldAt).All(sys)
	if err != nil {
		return 0, 0, fmt.Errorf("reading idle warnings: %w", err)
	}
	warnedAt := map[string]time.Time{}
	for _, e := range evs {
		if !e.At.Before(since[e.JobID]) && e.At.After(warnedAt[e.JobID]) {
			warnedAt[e.JobID] = e.At
		}
	}
	var warnings []*ent.JobEventCreate
	var toWarn []string
	for _, j := range batch {
		timeout := timeouts[j.QueueID]
		ahead := IdleWarnAhead(timeout)
		idle := now.Sub(since[j.ID])
		w, isWarned := warnedAt[j.ID]
		switch {
		case isWarned && idle >= timeout && now.Sub(w) >= ahead:
			ok, err := s.IdleStopped(ctx, j.ID, roundIdle(idle), now)
			if err != nil {
				return warned, stopped, err
			}
			if ok {
				stopped++
			}
		case !isWarned && idle >= timeout-ahead:
			warnings = append(warnings, s.DB.Ent.JobEvent.Create().
				SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
				SetJobID(j.ID).SetStatus(jobevent.StatusRunning).
				SetReason(IdleWarningReason(idle, max(timeout-idle, ahead))).SetAt(now))
			toWarn = append(toWarn, j.ID)
		}
	}
	if len(warnings) > 0 {
		if err := s.DB.Ent.JobEvent.CreateBulk(warnings...).Exec(sys); err != nil {
			return warned, stopped, fmt.Errorf("warning %d idle jobs: %w", len(warnings), err)
		}
		for _, id := range toWarn {
			s.publish(ctx, notify.TopicJob, id) // its event followers
		}
		warned += len(warnings)
		s.Log.Info("warned idle jobs", "jobs", len(warnings))
	}
	return warned, stopped, nil
}

// IdleWarningReason is the warning event's reason for a job idle for idle,
// stopped in left unless used: "idle for 25m: stops in 5m unless used
// (relay traffic, an attached terminal or exec)".
func IdleWarningReason(idle, left time.Duration) string {
	return ReasonIdle(roundIdle(idle)) + ": stops in " + span(left) +
		" unless used (relay traffic, an attached terminal or exec)"
}

// lastActive is when job j was last used: its last activity, or its start.
func lastActive(j *ent.Job) time.Time {
	var t time.Time
	if j.StartedAt != nil {
		t = *j.StartedAt
	}
	if j.LastActiveAt != nil && j.LastActiveAt.After(t) {
		t = *j.LastActiveAt
	}
	return t
}

// roundIdle drops what is below the minute (below the second under a
// minute) from an idle time, so a reason reads "idle for 30m", not
// "idle for 30m17.2s", when sweeps run off the minute.
func roundIdle(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Truncate(time.Minute)
	}
	return d.Truncate(time.Second)
}

// span writes d briefly: "5m", "1h", "1h30m0s" as Go does otherwise.
func span(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

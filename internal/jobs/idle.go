package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/internal/jobs/jobstate"
)

// IdleStopped stops running job id, idle for idle under its queue's idle
// timeout, at at, with reason "idle for 30m": like a cancel, its services
// stop, its last partial minute is charged and the meter stops. It returns
// false, having written nothing, when the job is not running (ended,
// requeued, or not started yet).
func (s *Service) IdleStopped(ctx context.Context, id string, idle time.Duration, at time.Time) (bool, error) {
	stopped, err := s.endNow(ctx, jobstate.IdleStopped, id, ReasonIdle(idle), at)
	if err != nil {
		return false, fmt.Errorf("stopping idle job %s: %w", id, err)
	}
	if stopped {
		s.Log.Info("stopped idle job", "job", id, "idle", idle)
	}
	return stopped, nil
}

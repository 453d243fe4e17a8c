package scheduler

import (
	"context"

	"github.com/levers9/levers9/internal/notify"
)

// Run schedules each queue as soon as it is signalled (a job submitted or
// ended, a node joined or came back): no polling tick between a submission
// and its placement. Signals of one queue arriving during a pass merge
// into one more pass. River's scheduling jobs remain the durable backstop
// for signals lost in a crash. Run returns when ctx ends.
func (s *Service) Run(ctx context.Context) {
	if s.Bus == nil {
		return
	}
	keys, stop := s.Bus.SubscribeAll(notify.TopicQueue)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keys.C():
		}
		for _, queueID := range keys.Take() {
			if _, err := s.ScheduleQueue(ctx, queueID); err != nil && ctx.Err() == nil {
				// Often a concurrent pass on another replica; River retries.
				s.log().Debug("signalled scheduling pass failed", "queue", queueID, "err", err)
			}
		}
	}
}

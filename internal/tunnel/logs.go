package tunnel

import (
	"context"

	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

// logs stores lines of the current attempt of a job placed on this node,
// then wakes followers.
func (s *session) logs(ctx context.Context, m wire.Logs) error {
	if len(m.Lines) == 0 {
		return nil
	}
	// Every service the batch names must be one this node runs for the
	// attempt, not only the first line's.
	checked := map[string]bool{}
	for _, l := range m.Lines {
		if checked[l.Service] {
			continue
		}
		checked[l.Service] = true
		svc, err := s.srv.Jobs.OwnService(ctx, s.ref(m.JobID, m.Attempt, l.Service))
		if svc == nil || err != nil {
			return err
		}
	}
	if err := s.srv.Logs.Append(ctx, m.JobID, max(m.Attempt, 1), m.Lines); err != nil {
		return err
	}
	if s.srv.Bus != nil {
		if err := s.srv.Bus.Publish(ctx, notify.TopicJob, m.JobID); err != nil {
			s.log.Warn("signalling new log lines", "job", m.JobID, "err", err)
		}
	}
	return nil
}

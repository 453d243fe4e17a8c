package functions

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/internal/fault"
)

// An ephemeral app lives while its script runs: the client says so every
// HeartbeatEvery, and an app silent for EphemeralGrace is stopped, so a
// script killed outright does not leave containers running (and billed).
// The grace leaves time to resume a map by its ID after the client died.
const (
	HeartbeatEvery = 30 * time.Second
	EphemeralGrace = 5 * time.Minute
)

// Heartbeat records that the client of ephemeral app id is alive. A
// stopped app is returned as it is: the client learns it stopped.
func (s *Service) Heartbeat(ctx context.Context, id string) (*ent.App, error) {
	a, err := s.DB.Ent.App.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, fault.Missing(fmt.Sprintf("app %q", clip(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading app %s: %w", id, err)
	}
	if a.State != app.StateRUNNING {
		return a, nil
	}
	return s.DB.Ent.App.UpdateOneID(id).SetLastSeenAt(s.now()).Save(ctx)
}

// stopAbandoned stops the ephemeral apps whose client went silent.
func (s *Service) stopAbandoned(sys context.Context) error {
	quiet := s.now().Add(-EphemeralGrace)
	ids, err := s.DB.Ent.App.Query().
		Where(app.StateEQ(app.StateRUNNING), app.Ephemeral(true), app.LastSeenAtLT(quiet)).IDs(sys)
	if err != nil {
		return fmt.Errorf("listing abandoned apps: %w", err)
	}
	for _, id := range ids {
		if _, err := s.StopApp(sys, id, fmt.Sprintf("its client sent no heartbeat for %s", EphemeralGrace)); err != nil {
			return err
		}
	}
	return nil
}

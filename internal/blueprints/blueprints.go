// Package blueprints keeps what is installed in containers: steps declared
// in code, each keyed by the hash of the previous key and the step, built
// once per tenant and key by a build job on a Docker node, exported to
// blob storage so that any node can load it, and reused by every function,
// sandbox and box that names it.
package blueprints

import (
	"log/slog"
	"time"

	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs"
)

// Service builds and finds blueprints.
type Service struct {
	DB    *database.DB
	Jobs  *jobs.Service // submits build jobs
	Blobs *blobs.Store  // keeps exported images (kind blobs.KindImage)
	Log   *slog.Logger
	Now   func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

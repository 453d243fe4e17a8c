package workers

import (
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/ent"
)

// Deps are what the workers need.
type Deps struct {
	Ent *ent.Client
	Log *slog.Logger
}

// Register returns every worker of levers9.
func Register(d Deps) *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &ScheduleJobWorker{Ent: d.Ent, Log: d.Log})
	return w
}

// Queues are the River queues a working client serves.
func Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{
		river.QueueDefault: {MaxWorkers: 10},
		QueueScheduling:    {MaxWorkers: 4},
	}
}

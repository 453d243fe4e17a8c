package workers

import (
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metering"
)

// Deps are what the workers need. Meter and Jobs may be nil where no
// metering runs (tests of other parts).
type Deps struct {
	Ent   *ent.Client
	Log   *slog.Logger
	Meter *metering.Meter
	Jobs  *jobs.Service
}

// Register returns every worker of levers9.
func Register(d Deps) *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &ScheduleJobWorker{Ent: d.Ent, Log: d.Log})
	if d.Meter != nil {
		river.AddWorker(w, &MeterRunsWorker{Meter: d.Meter, Jobs: d.Jobs, Log: d.Log})
		river.AddWorker(w, &MeterStorageWorker{Meter: d.Meter, Log: d.Log})
	}
	return w
}

// Periodic are the periodic jobs; River's leader election runs them on one
// replica at a time.
func Periodic(d Deps) []*river.PeriodicJob {
	if d.Meter == nil {
		return nil
	}
	every := func(d time.Duration, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(d),
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{RunOnStart: true})
	}
	return []*river.PeriodicJob{
		every(time.Minute, MeterRunsArgs{}),
		every(time.Hour, MeterStorageArgs{}),
	}
}

// Queues are the River queues a working client serves.
func Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{
		river.QueueDefault: {MaxWorkers: 10},
		QueueScheduling:    {MaxWorkers: 4},
	}
}

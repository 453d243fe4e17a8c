package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/scheduler"
)

// Deps are what the workers need. Meter and Jobs may be nil where no
// metering runs (tests of other parts); without Jobs no idle jobs stop.
type Deps struct {
	Ent   *ent.Client
	Log   *slog.Logger
	Meter *metering.Meter
	Jobs  *jobs.Service
	// Files, when set, measures buckets before storage is charged.
	Files *buckets.Files
	// Liveness, when set, sweeps for silent nodes periodically.
	Liveness *nodes.Liveness
	// Scheduler places jobs; NewClients fills in one without a Bus when
	// nil (nodes then learn of new work only when they resync).
	Scheduler *scheduler.Service
	// Functions, when set, reconciles functions' containers and calls
	// and fires their cron schedules.
	Functions *functions.Service
	// Blueprints, when set, fails builds that ended without an image.
	Blueprints *blueprints.Service
	// SQLite, when set, is the SQLite database whose planner statistics
	// are refreshed periodically (NewClients sets it).
	SQLite *database.DB
}

// Register returns every worker of levers9.
func Register(d Deps) *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &ScheduleQueueWorker{Scheduler: d.Scheduler, Log: d.Log})
	river.AddWorker(w, &SchedulePendingWorker{Scheduler: d.Scheduler, Log: d.Log})
	if d.Meter != nil {
		river.AddWorker(w, &MeterRunsWorker{Meter: d.Meter, Jobs: d.Jobs, Log: d.Log})
		river.AddWorker(w, &StopUnpaidWorker{Jobs: d.Jobs, Log: d.Log})
		river.AddWorker(w, &MeterStorageWorker{Meter: d.Meter, Files: d.Files, Log: d.Log})
	}
	if d.Jobs != nil {
		river.AddWorker(w, &StopIdleWorker{Jobs: d.Jobs, Log: d.Log})
	}
	if d.Liveness != nil {
		river.AddWorker(w, &NodeLivenessWorker{Liveness: d.Liveness, Log: d.Log})
	}
	if d.Functions != nil {
		river.AddWorker(w, &ReconcileFunctionsWorker{Functions: d.Functions, Log: d.Log})
		river.AddWorker(w, &FireSchedulesWorker{Functions: d.Functions, Log: d.Log})
	}
	if d.Blueprints != nil {
		river.AddWorker(w, &SettleBlueprintsWorker{Blueprints: d.Blueprints, Log: d.Log})
	}
	if d.SQLite != nil {
		river.AddWorker(w, &OptimizeDatabaseWorker{DB: d.SQLite})
	}
	return w
}

// Periodic are the periodic jobs; River's leader election runs them on one
// replica at a time.
func Periodic(d Deps) []*river.PeriodicJob {
	on := func(s river.PeriodicSchedule, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(s,
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{RunOnStart: true})
	}
	every := func(d time.Duration, args river.JobArgs) *river.PeriodicJob {
		return on(river.PeriodicInterval(d), args)
	}
	// everyIfDue is every, skipped while due says there is nothing to do.
	everyIfDue := func(every time.Duration, args river.JobArgs, due func(context.Context) (bool, error)) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(every), ifDue(args, due, d.Log), &river.PeriodicJobOpts{RunOnStart: true})
	}
	// The safety net behind per-queue passes; skipped when nothing waits.
	periodic := []*river.PeriodicJob{everyIfDue(30*time.Second, SchedulePendingArgs{}, schedulePendingDue(d.Scheduler))}
	if d.Meter != nil {
		periodic = append(periodic, every(time.Minute, MeterRunsArgs{}), every(time.Hour, MeterStorageArgs{}))
	}
	if d.Jobs != nil {
		periodic = append(periodic, every(time.Minute, StopIdleArgs{}))
	}
	if d.Liveness != nil {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(d.Liveness.Every()), livenessCheck(d.Liveness, d.Log),
			&river.PeriodicJobOpts{RunOnStart: true}))
	}
	if d.Functions != nil {
		periodic = append(periodic, everyIfDue(reconcileFunctionsEvery, ReconcileFunctionsArgs{}, d.Functions.ReconcileDue),
			on(wholeMinutes{}, FireSchedulesArgs{}))
	}
	if d.Blueprints != nil {
		periodic = append(periodic, every(settleBlueprintsEvery, SettleBlueprintsArgs{}))
	}
	if d.SQLite != nil {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(optimizeDatabaseEvery),
			func() (river.JobArgs, *river.InsertOpts) { return OptimizeDatabaseArgs{}, nil }, nil))
	}
	return periodic
}

// Queues are the River queues a working client serves.
func Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{
		river.QueueDefault: {MaxWorkers: 10},
		QueueScheduling:    {MaxWorkers: 4},
	}
}

package workers

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"entgo.io/ent/dialect"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/scheduler"
)

// Runner is the part of a River client that works jobs; its transaction
// type differs between drivers.
type Runner interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// Clients are the River clients of one database: Inserter enqueues inside
// the *sql.Tx shared with ent; Runner works the jobs. On SQLite one client
// does both; on PostgreSQL the runner uses pgx for LISTEN/NOTIFY.
type Clients struct {
	Inserter *river.Client[*sql.Tx]
	Runner   Runner
}

// NewClients returns the River clients for db working the workers of d.
func NewClients(db *database.DB, d Deps) (*Clients, error) {
	if d.Scheduler == nil {
		d.Scheduler = &scheduler.Service{DB: db, Log: d.Log, Now: time.Now}
	}
	cfg := &river.Config{
		Logger:       d.Log.With("component", "river"),
		Queues:       Queues(),
		Workers:      Register(d),
		PeriodicJobs: Periodic(d),
	}
	if db.Dialect == dialect.SQLite {
		// SQLite has no notifications: poll often (one local file, cheap).
		cfg.FetchPollInterval = 50 * time.Millisecond
		cfg.FetchCooldown = 10 * time.Millisecond
		c, err := river.NewClient(riversqlite.New(db.SQL), cfg)
		if err != nil {
			return nil, fmt.Errorf("creating River client: %w", err)
		}
		return &Clients{Inserter: c, Runner: c}, nil
	}
	ins, err := river.NewClient(riverdatabasesql.New(db.SQL), &river.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("creating River inserter: %w", err)
	}
	w, err := river.NewClient[pgx.Tx](riverpgxv5.New(db.Pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("creating River worker: %w", err)
	}
	return &Clients{Inserter: ins, Runner: w}, nil
}

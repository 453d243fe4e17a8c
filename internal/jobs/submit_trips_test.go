package jobs_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/workers"
)

// maxSubmitStatements is what a plain submission (no project, no price,
// no mount, no key) may send PostgreSQL while its caller waits, each a
// round trip: begin, the queue, the job, its services (one INSERT), its
// event, its River job, commit. It was 11 before the rows were written
// without re-reading their links and the queue without reading the job
// back; the wake-up of the queue (pg_notify) is sent after the answer.
const maxSubmitStatements = 7

// tripCounter counts the statements sent with a context marked by mark.
type tripCounter struct {
	mu   sync.Mutex
	sent []string
}

type markKey struct{}

func mark(ctx context.Context) context.Context { return context.WithValue(ctx, markKey{}, true) }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if ctx.Value(markKey{}) != nil {
		c.mu.Lock()
		c.sent = append(c.sent, strings.Join(strings.Fields(data.SQL), " "))
		c.mu.Unlock()
	}
	return ctx
}

func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *tripCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	sent := c.sent
	c.sent = nil
	return sent
}

// TestSubmitRoundTrips counts what one submission sends PostgreSQL,
// through a pgx tracer on a handle of its own to the test's database.
func TestSubmitRoundTrips(t *testing.T) {
	url := dbtest.PostgresURL(t)
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	member := tn.AddMember(t, "member")

	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	counter := &tripCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sqlDB := stdlib.OpenDBFromPool(pool)
	db := &database.DB{Dialect: dialect.Postgres, SQL: sqlDB, Pool: pool,
		Ent: ent.NewClient(ent.Driver(entsql.OpenDB(dialect.Postgres, sqlDB)))}
	rc, err := workers.NewClients(db, workers.Deps{Ent: db.Ent, Log: fixture.Log()})
	if err != nil {
		t.Fatal(err)
	}
	js := &jobs.Service{DB: db, Log: fixture.Log(), Now: time.Now,
		Schedule: workers.InsertScheduleJob(rc),
		ScheduleQueue: func(ctx context.Context, tx *sql.Tx, queueID string) error {
			return workers.InsertScheduleQueue(ctx, rc, tx, queueID)
		}}

	spec := jobspec.Job{Name: "trips", Queue: tenancy.DefaultQueue, Services: []jobspec.Service{
		fixture.Service(1, 64), fixture.Service(0.5, 64),
	}}
	spec.Services[1].Name = "second"
	// The first submission also asks River which server this is, once.
	for i := range 3 {
		if _, err := js.Submit(mark(tn.As(member)), spec); err != nil {
			t.Fatalf("submission %d: %v", i, err)
		}
		sent := counter.take()
		t.Logf("submission %d: %d statements", i, len(sent))
		if i > 0 && len(sent) > maxSubmitStatements {
			t.Fatalf("a submission sent %d statements, want at most %d:\n%s", len(sent), maxSubmitStatements, strings.Join(sent, "\n"))
		}
	}
}

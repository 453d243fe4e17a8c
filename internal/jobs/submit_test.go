package jobs_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/workers"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// world is a migrated database with one tenant, seen by its admin.
type world struct {
	db       *database.DB
	admin    context.Context // the tenant admin's viewer
	schedule func(context.Context, *sql.Tx, string) error
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	rc, err := workers.NewClients(tn.DB, workers.Deps{Ent: tn.DB.Ent, Log: fixture.Log()})
	if err != nil {
		t.Fatal(err)
	}
	return &world{db: tn.DB, admin: tn.AsAdmin(), schedule: workers.InsertScheduleJob(rc)}
}

func (w *world) service(schedule func(context.Context, *sql.Tx, string) error) *jobs.Service {
	return &jobs.Service{DB: w.db, Log: slog.New(slog.DiscardHandler), Now: time.Now, Schedule: schedule}
}

// rows counts jobs, services and River jobs.
func (w *world) rows(t *testing.T) (jobsN, servicesN, riverN int) {
	t.Helper()
	sys := viewer.SystemContext(context.Background())
	var err error
	if jobsN, err = w.db.Ent.Job.Query().Count(sys); err != nil {
		t.Fatal(err)
	}
	if servicesN, err = w.db.Ent.Service.Query().Count(sys); err != nil {
		t.Fatal(err)
	}
	if err := w.db.SQL.QueryRow("SELECT count(*) FROM river_job").Scan(&riverN); err != nil {
		t.Fatal(err)
	}
	return jobsN, servicesN, riverN
}

func twoServices() jobspec.Job {
	return jobspec.Job{
		Name:  "pair",
		Queue: tenancy.DefaultQueue,
		Services: []jobspec.Service{
			{Name: "server", Image: "busybox", Command: []string{"sleep", "60"}, CPU: 1, MemoryMiB: 128},
			{Name: "client", Image: "busybox", Command: []string{"true"}, CPU: 0.5, MemoryMiB: 64},
		},
	}
}

// TestSubmitOneTransaction: submitJob inserts the job rows and a River job
// in one transaction shared by ent and River; a failure after the insert
// leaves neither.
func TestSubmitOneTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)

		t.Run("failure after the inserts", func(t *testing.T) {
			boom := errors.New("boom after enqueueing")
			var scheduled string
			s := w.service(func(ctx context.Context, tx *sql.Tx, jobID string) error {
				if err := w.schedule(ctx, tx, jobID); err != nil {
					t.Errorf("enqueueing: %v", err)
					return err
				}
				// Inside the transaction, every insert is there.
				var n int
				if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM river_job").Scan(&n); err != nil || n != 1 {
					t.Errorf("river_job inside the transaction: %d rows, %v", n, err)
				}
				if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM services").Scan(&n); err != nil || n != 2 {
					t.Errorf("services inside the transaction: %d rows, %v", n, err)
				}
				scheduled = jobID
				return boom
			})
			j, err := s.Submit(w.admin, twoServices())
			if !errors.Is(err, boom) || j != nil {
				t.Fatalf("Submit = %v, %v; want the schedule error", j, err)
			}
			if scheduled == "" {
				t.Fatal("Schedule was never called")
			}
			if jn, sn, rn := w.rows(t); jn != 0 || sn != 0 || rn != 0 {
				t.Fatalf("after a failed submit: %d jobs, %d services, %d river jobs; want none", jn, sn, rn)
			}
			_, err = w.db.Ent.Job.Get(viewer.SystemContext(context.Background()), scheduled)
			if !ent.IsNotFound(err) {
				t.Fatalf("job %s after rollback: %v", scheduled, err)
			}
		})

		t.Run("panic after the inserts", func(t *testing.T) {
			s := w.service(func(ctx context.Context, tx *sql.Tx, jobID string) error {
				if err := w.schedule(ctx, tx, jobID); err != nil {
					return err
				}
				panic("boom")
			})
			func() {
				defer func() {
					if p := recover(); p != "boom" {
						t.Fatalf("recovered %v, want the panic", p)
					}
				}()
				_, _ = s.Submit(w.admin, twoServices())
			}()
			if jn, sn, rn := w.rows(t); jn != 0 || sn != 0 || rn != 0 {
				t.Fatalf("after a panicking submit: %d jobs, %d services, %d river jobs; want none", jn, sn, rn)
			}
		})

		t.Run("success", func(t *testing.T) {
			j, err := w.service(w.schedule).Submit(w.admin, twoServices())
			if err != nil {
				t.Fatal(err)
			}
			if jn, sn, rn := w.rows(t); jn != 1 || sn != 2 || rn != 1 {
				t.Fatalf("after a submit: %d jobs, %d services, %d river jobs; want 1, 2, 1", jn, sn, rn)
			}
			sys := viewer.SystemContext(context.Background())
			stored, err := w.db.Ent.Job.Get(sys, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Status != "PENDING" || stored.Name != "pair" || stored.OwnerID != j.OwnerID {
				t.Fatalf("stored job = %+v", stored)
			}
			svcs, err := w.db.Ent.Service.Query().Where(service.JobID(j.ID)).Order(ent.Asc(service.FieldName)).All(sys)
			if err != nil {
				t.Fatal(err)
			}
			if len(svcs) != 2 || svcs[0].Name != "client" || svcs[1].Name != "server" ||
				svcs[1].CPU != 1 || svcs[1].MemoryMib != 128 || svcs[0].Status != service.StatusPending {
				t.Fatalf("services = %+v", svcs)
			}
			var (
				kind, queue string
				raw         []byte
			)
			// River keeps args as jsonb, which SQLite stores in a binary form.
			args := "args::text"
			if w.db.Dialect == dialect.SQLite {
				args = "json(args)"
			}
			err = w.db.SQL.QueryRow("SELECT kind, queue, "+args+" FROM river_job").Scan(&kind, &queue, &raw)
			if err != nil {
				t.Fatal(err)
			}
			var decoded workers.ScheduleQueueArgs
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatalf("river_job args %q: %v", raw, err)
			}
			if kind != "schedule_queue" || queue != workers.QueueScheduling || decoded.QueueID != j.QueueID {
				t.Fatalf("river_job = %s %s %s, want schedule_queue %s for %s", kind, queue, raw, workers.QueueScheduling, j.QueueID)
			}
		})
	})
}

package workers

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
)

type noticeArgs struct {
	N int `json:"n"`
}

func (noticeArgs) Kind() string { return "test_notice" }

// River's jobs are announced, not polled for: with polls an hour apart,
// a job inserted in the caller's transaction, one inserted by River's
// periodic enqueuer in a transaction of its own, and one after the first
// were worked (SQLite: in-process notices; PostgreSQL: LISTEN/NOTIFY).
func TestInsertsWakeTheWorker(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		db := fixture.Open(t, url)
		worked := make(chan int, 10)
		w := river.NewWorkers()
		river.AddWorker(w, river.WorkFunc(func(_ context.Context, j *river.Job[noticeArgs]) error {
			worked <- j.Args.N
			return nil
		}))
		periodic := river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return noticeArgs{N: 0}, nil },
			&river.PeriodicJobOpts{RunOnStart: true})
		rc := startClients(t, db, &river.Config{
			Logger:  fixture.Log(),
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
			Workers: w, PeriodicJobs: []*river.PeriodicJob{periodic},
			FetchPollInterval: time.Hour, FetchCooldown: time.Millisecond,
		})

		insert := func(n int) {
			tx, err := db.SQL.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := rc.Inserter.InsertTx(context.Background(), tx, noticeArgs{N: n}, nil); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		want := map[int]bool{0: true, 1: true, 2: true}
		insert(1)
		for len(want) > 0 {
			select {
			case n := <-worked:
				if !want[n] {
					t.Fatalf("job %d worked twice", n)
				}
				delete(want, n)
				if n == 1 {
					insert(2) // after the start's first fetch, surely
				}
			case <-time.After(30 * time.Second): // only catches hangs
				t.Fatalf("jobs %v not worked", want)
			}
		}
	})
}

// startClients starts River clients of cfg on db, stopped when t ends.
func startClients(t testing.TB, db *database.DB, cfg *river.Config) *Clients {
	t.Helper()
	rc, err := newClients(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := rc.Runner.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rc.Runner.Stop(context.Background())
		cancel()
	})
	return rc
}

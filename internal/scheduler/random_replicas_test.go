package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/scheduler"
)

// TestTwoReplicasRandom runs two schedulers (two scheduler.Service, each
// with its own database handle, as two server replicas) passing over three
// queues that share nodes, concurrently, while one goroutine submits jobs
// and another ends, starts and cancels them, for several rounds. Queues
// sharing nodes is what makes it bite: two passes over different queues
// read the same free capacity, and only the node locks stop both from
// placing on it. After each round the database itself (SQL sums, not the
// scheduler's code) must show no node over its CPU, memory or GPUs, no GPU
// device booked twice, no job on two nodes, and as many jobs placed as the
// passes reported placing: a job placed twice would be counted twice.
func TestTwoReplicasRandom(t *testing.T) {
	t.Parallel()
	// PostgreSQL only: that is where replicas run. SQLite has one writer
	// (a second handle on its file is what TestConcurrentRandom tries).
	url := dbtest.URL(t, dialect.Postgres)
	{
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 11))
		f := newFixture(t, url)
		queues := []string{f.queue, f.addQueue(t, "q2"), f.addQueue(t, "q3")}
		for i := range 12 {
			// Every node in two or three queues: passes over different
			// queues compete for it.
			member := slices.Clone(queues)
			if rng.IntN(2) == 0 {
				k := rng.IntN(3)
				member = slices.Delete(member, k, k+1)
			}
			name := fmt.Sprintf("r%02d", i)
			f.addNode(t, name, randomNodeInventory(rng, name), true, member...)
		}
		replicas := []*scheduler.Service{f.scheduler(open(t, url)), f.scheduler(open(t, url))}
		load := open(t, url)
		ctx := context.Background()
		var placed, raced, passes atomic.Int64
		submitted := 0
		const rounds = 5
		for round := range rounds {
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				failure error
			)
			fail := func(err error) {
				mu.Lock()
				failure = errors.Join(failure, err)
				mu.Unlock()
			}
			stop := make(chan struct{})
			for r, s := range replicas {
				rr := rand.New(rand.NewPCG(seed, uint64(round*len(replicas)+r)))
				order := slices.Clone(queues)
				wg.Go(func() {
					for {
						rr.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
						for _, q := range order {
							n, err := s.ScheduleQueue(ctx, q)
							passes.Add(1)
							placed.Add(int64(n))
							switch {
							case errors.Is(err, scheduler.ErrRaced):
								raced.Add(1)
							case err != nil:
								fail(fmt.Errorf("replica %d: %w", r, err))
								return
							}
						}
						select {
						case <-stop:
							return
						default:
						}
					}
				})
			}
			var churn sync.WaitGroup
			sr := rand.New(rand.NewPCG(seed, uint64(100+round)))
			batches := 6
			submitted += batches * 8
			churn.Go(func() {
				for b := range batches {
					specs := make([]jobSpec, 8)
					for k := range specs {
						specs[k] = randomJob(sr, queues[sr.IntN(3)], t0.Add(time.Duration(round*1000+b*10+k)*time.Second))
					}
					if err := f.db.InTx(f.sys, func(tx *database.Tx) error { return f.insertJobs(tx, specs, nil) }); err != nil {
						fail(fmt.Errorf("submitting: %w", err))
						return
					}
				}
			})
			er := rand.New(rand.NewPCG(seed, uint64(200+round)))
			churn.Go(func() {
				for range 40 {
					if err := endSome(ctx, f, load, er); err != nil {
						fail(fmt.Errorf("ending: %w", err))
						return
					}
				}
			})
			churn.Wait()
			close(stop)
			wg.Wait()
			if failure != nil {
				t.Fatalf("round %d: %v", round, failure)
			}
			checkBySQL(t, f, round, placed.Load())
			checkNoOvercommit(t, f)
			if t.Failed() {
				t.Fatalf("round %d failed", round)
			}
		}
		t.Logf("%d jobs submitted, %d placed in %d passes, %d raced", submitted, placed.Load(), passes.Load(), raced.Load())
		if placed.Load() == 0 {
			t.Fatal("nothing was placed: the test tests nothing")
		}
	}
}

// endSome ends (completes or fails), starts or cancels one random job,
// releasing capacity, in one transaction as the job's lifecycle does.
func endSome(ctx context.Context, f *world, db *database.DB, rng *rand.Rand) error {
	live, err := db.Ent.Job.Query().Where(job.StatusIn(job.StatusPending, job.StatusRunning)).IDs(f.sys)
	if err != nil || len(live) == 0 {
		return err
	}
	id := live[rng.IntN(len(live))]
	st := []job.Status{job.StatusComplete, job.StatusError, job.StatusRunning, job.StatusCancelled}[rng.IntN(4)]
	return db.InTx(f.sys, func(tx *database.Tx) error {
		// Only a placed job starts; a cancelled one may be placed or not.
		q := tx.Ent.Job.Update().Where(job.ID(id), job.StatusIn(job.StatusPending, job.StatusRunning))
		if st == job.StatusRunning {
			q.Where(job.HasServicesWith(service.NodeIDNotNil()))
		}
		n, err := q.SetStatus(st).Save(f.sys)
		if err != nil || n == 0 {
			return err
		}
		return tx.Ent.Service.Update().Where(service.JobID(id)).SetStatus(service.Status(st)).Exec(f.sys)
	})
}

// checkBySQL checks the invariants with the database's own sums.
func checkBySQL(t *testing.T, f *world, round int, placed int64) {
	t.Helper()
	ctx := f.sys
	db := f.db.SQL
	holding := "s.node_id IS NOT NULL AND s.status IN ('PENDING', 'RUNNING')"
	// CPU and memory per node, GPUs per node and type.
	rows, err := db.QueryContext(ctx, `SELECT s.node_id, coalesce(s.gpu_type, ''), sum(s.cpu), sum(s.memory_mib), sum(s.gpus)
		FROM services s WHERE `+holding+` GROUP BY s.node_id, s.gpu_type`)
	if err != nil {
		t.Fatal(err)
	}
	type sum struct {
		cpu  float64
		mem  int64
		gpus map[string]int
	}
	used := map[string]*sum{}
	for rows.Next() {
		var node, typ string
		var cpu float64
		var mem int64
		var gpus int
		if err := rows.Scan(&node, &typ, &cpu, &mem, &gpus); err != nil {
			t.Fatal(err)
		}
		u := used[node]
		if u == nil {
			u = &sum{gpus: map[string]int{}}
			used[node] = u
		}
		u.cpu += cpu
		u.mem += mem
		u.gpus[typ] += gpus
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	nodes, err := f.db.Ent.Node.Query().All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, n := range nodes {
		names[n.ID] = n.Name
		u, c := used[n.ID], capacity(n)
		if u == nil {
			continue
		}
		if u.cpu > c.CPU+1e-9 || u.mem > c.MemoryMiB {
			t.Errorf("round %d: node %s over-committed: %.1f CPUs of %.1f, %d MiB of %d", round, n.Name, u.cpu, c.CPU, u.mem, c.MemoryMiB)
		}
		for typ, k := range u.gpus {
			if typ != "" && k > c.GPUs[typ] {
				t.Errorf("round %d: node %s over-committed: %d %s GPUs of %d", round, n.Name, k, typ, c.GPUs[typ])
			}
		}
	}
	// No device booked twice on a node. Devices a node reports without
	// IDs are numbered per type ("0", "1", …): a device is its type and ID.
	devices := `SELECT s.node_id, s.gpu_type || ' ' || d.value, count(*) FROM services s, json_each(s.gpu_devices) d
		WHERE ` + holding + ` AND json_type(s.gpu_devices) = 'array' GROUP BY s.node_id, s.gpu_type, d.value HAVING count(*) > 1`
	if f.db.Dialect == dialect.Postgres {
		devices = `SELECT s.node_id, s.gpu_type || ' ' || d.value, count(*) FROM services s, jsonb_array_elements_text(s.gpu_devices) d(value)
			WHERE ` + holding + ` AND jsonb_typeof(s.gpu_devices) = 'array' GROUP BY s.node_id, s.gpu_type, d.value HAVING count(*) > 1`
	}
	rows, err = db.QueryContext(ctx, devices)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var node, dev string
		var k int
		if err := rows.Scan(&node, &dev, &k); err != nil {
			t.Fatal(err)
		}
		t.Errorf("round %d: node %s: device %s booked %d times", round, names[node], dev, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	// No job on two nodes, and each job placed once: the passes reported
	// placing as many jobs as have a node (ended ones keep theirs).
	var split, onNodes int64
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT job_id FROM services WHERE node_id IS NOT NULL
		GROUP BY job_id HAVING count(DISTINCT node_id) > 1) x`).Scan(&split)
	if err != nil {
		t.Fatal(err)
	}
	if split > 0 {
		t.Errorf("round %d: %d jobs split over nodes", round, split)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT job_id) FROM services WHERE node_id IS NOT NULL`).Scan(&onNodes); err != nil {
		t.Fatal(err)
	}
	if onNodes != placed {
		t.Errorf("round %d: passes reported %d placements, %d jobs are on nodes", round, placed, onNodes)
	}
}

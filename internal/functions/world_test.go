package functions_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// codeHash is the code package every test app names.
var codeHash = strings.Repeat("ab", 32)

// uploads is what each tenant uploaded: the blob store's answer to Has,
// keyed by the viewer's tenant as the real store is.
type uploads struct {
	mu   sync.Mutex
	have map[string]bool // tenant/hash
}

func (u *uploads) Has(ctx context.Context, hash string) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.have[viewer.FromContext(ctx).TenantID+"/"+hash], nil
}

func (u *uploads) add(tenant, hash string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.have[tenant+"/"+hash] = true
}

// world is one tenant with a node serving its default queue, and the
// functions service over it.
type world struct {
	tn    *fixture.Tenant
	fn    *functions.Service
	node  *ent.Node
	clock *fixture.Clock
	blobs *uploads
}

func newWorld(t *testing.T, url string) *world { return newBenchWorld(t, url) }

func newBenchWorld(t testing.TB, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	clock := fixture.NewClock(time.Now())
	bus := notify.New(nil, fixture.Log())
	js := fixture.Jobs(tn.DB, clock.Now)
	js.Bus = bus
	blobs := &uploads{have: map[string]bool{}}
	blobs.add(tn.ID, codeHash)
	w := &world{
		tn: tn, clock: clock, blobs: blobs,
		fn:   &functions.Service{DB: tn.DB, Log: fixture.Log(), Now: clock.Now, Bus: bus, Jobs: js, Blobs: blobs},
		node: tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}}),
	}
	return w
}

// deploy deploys app name with fns (the defaults: default queue, module
// app, qualname = name).
func (w *world) deploy(t *testing.T, ctx context.Context, name string, fns ...functions.FunctionSpec) *ent.App {
	t.Helper()
	for i := range fns {
		if fns[i].Queue == "" {
			fns[i].Queue = tenancy.DefaultQueue
		}
		if fns[i].Module == "" {
			fns[i].Module = "app"
		}
		if fns[i].Qualname == "" {
			fns[i].Qualname = fns[i].Name
		}
	}
	a, err := w.fn.DeployEphemeral(ctx, functions.AppSpec{Name: name, CodeHash: codeHash, Functions: fns})
	if err != nil {
		t.Fatalf("deploying %s: %v", name, err)
	}
	return a
}

// containers lists fn's containers, oldest first.
func (w *world) containers(t testing.TB, fnID string) []*ent.Container {
	t.Helper()
	cs, err := w.tn.DB.Ent.Container.Query().Where(container.FunctionID(fnID)).
		Order(ent.Asc(container.FieldCreatedAt)).All(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// runner places container c's job on the world's node and identifies its
// runner as the node's agent would.
func (w *world) runner(t *testing.T, c *ent.Container) *functions.Runner { return w.benchRunner(t, c) }

func (w *world) benchRunner(t testing.TB, c *ent.Container) *functions.Runner {
	t.Helper()
	if c.JobID == "" {
		t.Fatalf("container %s has no job (%s)", c.ID, c.StopReason)
	}
	if err := w.tn.DB.Ent.Service.Update().Where(service.JobID(c.JobID)).SetNodeID(w.node.ID).Exec(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
	now := w.clock.Now()
	r, err := w.fn.RunnerFor(context.Background(), w.node.ID, wire.RunnerOpen{
		JobID: c.JobID, Attempt: 1, ScheduledAt: now, CodeFetchedAt: now, ImageReadyAt: now,
	})
	if err != nil {
		t.Fatalf("identifying the runner of %s: %v", c.ID, err)
	}
	return r
}

// claim claims up to n calls without waiting.
func (w *world) claim(t *testing.T, r *functions.Runner, n int, done ...functions.Outcome) ([]functions.Claimed, bool) {
	t.Helper()
	now := w.clock.Now()
	got, exit, err := w.fn.Claim(context.Background(), r, functions.ClaimRequest{
		Max: n, Done: done, Phases: functions.Phases{ProcessStartedAt: now, ImportedAt: now},
	})
	if err != nil {
		t.Fatalf("claiming: %v", err)
	}
	return got, exit
}

func ok(c functions.Claimed, result string) functions.Outcome {
	return functions.Outcome{TaskID: c.ID, Attempt: c.Attempt, Result: &functions.Payload{Data: []byte(result)}}
}

func failed(c functions.Claimed, msg string) functions.Outcome {
	return functions.Outcome{TaskID: c.ID, Attempt: c.Attempt,
		Failure: &functions.Failure{Kind: functions.KindException, Message: msg, Traceback: "Traceback…\nValueError: " + msg}}
}

func args(s string) functions.Payload { return functions.Payload{Data: []byte(s)} }

package functions_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
	"github.com/levers9/levers9/storage"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// codePackage is the code every test app names; codeHash its SHA-256.
var (
	codePackage = []byte("PK fake zip of app.py")
	codeHash    = fmt.Sprintf("%x", sha256.Sum256(codePackage))
)

// upload stores b as a blob of the tenant ctx acts in and returns its hash.
func (w *world) upload(t testing.TB, ctx context.Context, kind string, b []byte) string {
	t.Helper()
	h := fmt.Sprintf("%x", sha256.Sum256(b))
	if _, err := w.blobs.Put(ctx, kind, h, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("uploading a %s blob: %v", kind, err)
	}
	return h
}

// world is one tenant with a node serving its default queue, and the
// functions service over it.
type world struct {
	tn    *fixture.Tenant
	fn    *functions.Service
	node  *ent.Node
	clock *fixture.Clock
	blobs *blobs.Store
}

func newWorld(t *testing.T, url string) *world { return newBenchWorld(t, url) }

func newBenchWorld(t testing.TB, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	clock := fixture.NewClock(time.Now())
	bus := notify.New(nil, fixture.Log())
	js := fixture.Jobs(tn.DB, clock.Now)
	js.Bus = bus
	drv, err := storage.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &blobs.Store{DB: tn.DB, Driver: drv, Log: fixture.Log()}
	w := &world{
		tn: tn, clock: clock, blobs: store,
		fn:   &functions.Service{DB: tn.DB, Log: fixture.Log(), Now: clock.Now, Bus: bus, Jobs: js, Blobs: store},
		node: tn.AddNode(t, fixture.Node{Name: "n1", Queues: []string{tn.DefaultQueue}}),
	}
	w.upload(t, tn.AsAdmin(), "code", codePackage)
	return w
}

// deploy deploys ephemeral app name with fns (see spec for defaults).
func (w *world) deploy(t *testing.T, ctx context.Context, name string, fns ...functions.FunctionSpec) *ent.App {
	t.Helper()
	a, err := w.fn.DeployEphemeral(ctx, spec(name, codeHash, fns...))
	if err != nil {
		t.Fatalf("deploying %s: %v", name, err)
	}
	return a
}

// deployVersion deploys a new version of deployed app name with code
// hash code and fns; the app returned carries the new version's functions.
func (w *world) deployVersion(t *testing.T, ctx context.Context, name, code string, fns ...functions.FunctionSpec) *ent.App {
	t.Helper()
	a, err := w.fn.Deploy(ctx, spec(name, code, fns...))
	if err != nil {
		t.Fatalf("deploying %s: %v", name, err)
	}
	return a
}

// spec is app name with fns and their defaults: default queue, module
// app, qualname = name.
func spec(name, code string, fns ...functions.FunctionSpec) functions.AppSpec {
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
	return functions.AppSpec{Name: name, CodeHash: code, Functions: fns}
}

// fnNamed is the function named name among fns.
func fnNamed(t testing.TB, fns []*ent.Function, name string) *ent.Function {
	t.Helper()
	for _, f := range fns {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no function %s", name)
	return nil
}

// knownSecrets is a secrets checker knowing some names.
type knownSecrets map[string]bool

func (k knownSecrets) Check(_ context.Context, names []string) error {
	for _, n := range names {
		if !k[n] {
			return fault.Invalid("secrets", "no secret %q in this environment", n)
		}
	}
	return nil
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

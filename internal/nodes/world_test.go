package nodes_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/wire"
)

// world is one tenant with its admin, and the node rules on a clock the
// test moves.
type world struct {
	db     *database.DB
	bus    *notify.Bus
	log    *slog.Logger
	nodes  *nodes.Service
	jobs   *jobs.Service
	tenant *ent.Tenant
	tn     *fixture.Tenant
	admin  context.Context
	sys    context.Context
	now    time.Time
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	db, log := tn.DB, fixture.Log()
	bus := notify.New(db.Pool, log)
	t.Cleanup(bus.Close)
	js := fixture.Jobs(db, nil)
	js.Bus = bus
	w := &world{
		db: db, bus: bus, log: log, tenant: tn.Ent, tn: tn, jobs: js, admin: tn.AsAdmin(), sys: fixture.Sys(),
		now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	}
	w.nodes = &nodes.Service{DB: db, Ent: db.Ent, Bus: bus, Log: log, Now: func() time.Time { return w.now }}
	return w
}

// invite makes an invite for nodeName ("": the agent names the node) that
// expires after ttl.
func (w *world) invite(t *testing.T, nodeName string, ttl time.Duration) (string, *ent.NodeInvite) {
	t.Helper()
	code, inv, err := w.nodes.CreateInvite(w.admin, nodeName, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return code, inv
}

// join makes a node named name, as its agent's join would.
func (w *world) join(t *testing.T, name string) string {
	t.Helper()
	code, _ := w.invite(t, "", time.Hour)
	res, err := w.nodes.Join(context.Background(), wire.JoinRequest{Invite: code, Name: name,
		Inventory: wire.Inventory{CPUs: 64, MemoryMiB: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	return res.NodeID
}

// submit submits a one-service job with retries.
func (w *world) submit(t *testing.T, retries int) *ent.Job {
	t.Helper()
	j, err := w.jobs.Submit(w.admin, jobspec.Job{Name: "r", Queue: tenancy.DefaultQueue, Retries: retries,
		Services: []jobspec.Service{{Name: "main", Command: []string{"sleep", "600"}, CPU: 1, MemoryMiB: 64}}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// placeOn puts job id's services on nodeID, as the scheduler would; with
// a non-zero sent, their start was sent to the node then.
func (w *world) placeOn(t *testing.T, id, nodeID string, sent time.Time) {
	t.Helper()
	u := w.db.Ent.Service.Update().Where(service.JobID(id)).SetNodeID(nodeID)
	if !sent.IsZero() {
		u.SetDispatchedAt(sent)
	}
	if err := u.Exec(w.sys); err != nil {
		t.Fatal(err)
	}
}

// running submits a job with retries, places it on nodeID and marks it
// running at start, as if an agent had started it.
func (w *world) running(t *testing.T, nodeID string, retries int, start time.Time) string {
	t.Helper()
	j := w.submit(t, retries)
	w.placeOn(t, j.ID, nodeID, start)
	if err := w.jobs.MarkRunning(context.Background(), j.ID, start); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

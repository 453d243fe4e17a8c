package sandboxes_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/sandboxes"
	"github.com/levers9/levers9/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// world is one tenant (an admin, a member) and another tenant, with a
// sandboxes service over real jobs and blueprints.
type world struct {
	tn, other *fixture.Tenant
	alice     *ent.User
	sb        *sandboxes.Service
	db        *ent.Client
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	db := fixture.Open(t, url)
	log := slog.New(slog.DiscardHandler)
	js := &jobs.Service{DB: db, Log: log, Now: time.Now, Schedule: func(context.Context, *sql.Tx, string) error { return nil }}
	w := &world{
		tn:    fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"}),
		other: fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "globex"}),
		db:    db.Ent,
	}
	w.alice = w.tn.AddMember(t, "alice")
	w.sb = &sandboxes.Service{DB: db, Jobs: js, Blueprints: &blueprints.Service{DB: db, Jobs: js, Log: log, Now: time.Now}, Log: log}
	return w
}

// blueprint records a blueprint of tn in state st.
func (w *world) blueprint(t *testing.T, tn *fixture.Tenant, key string, st blueprint.State) *ent.Blueprint {
	t.Helper()
	key = strings.Repeat(key, 64)[:64]
	bp, err := w.db.Blueprint.Create().SetTenantID(tn.ID).SetKey(key).SetFirstKey(key).SetSteps([]wire.BuildStep{}).
		SetImage(blueprints.Repository(tn.ID) + ":" + key).SetOwnerID(tn.Admin.ID).SetState(st).Save(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

func TestCreate(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ready := w.blueprint(t, w.tn, "a", blueprint.StateREADY)
		cases := []struct {
			name  string
			in    sandboxes.Input
			image string
		}{
			{"a blueprint, ports and resources", sandboxes.Input{Name: "nb", Blueprint: ready.ID, Ports: []int{8888, 22}, CPU: 2, MemoryMiB: 2048,
				TimeoutSeconds: 600, Env: []jobspec.EnvVar{{Name: "A", Value: "1"}}}, ready.Image},
			{"an image", sandboxes.Input{Image: "python:3.12-slim"}, "python:3.12-slim"},
			{"the default image", sandboxes.Input{}, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				j, err := w.sb.Create(w.tn.As(w.alice), tc.in)
				if err != nil {
					t.Fatal(err)
				}
				if j.Kind != job.KindSANDBOX || !j.Interactive || j.OwnerID != w.alice.ID || j.QueueID != w.tn.DefaultQueue {
					t.Errorf("job kind %s, interactive %v, owner %s, queue %s; want an interactive SANDBOX of alice on the default queue",
						j.Kind, j.Interactive, j.OwnerID, j.QueueID)
				}
				timeout := tc.in.TimeoutSeconds
				if timeout == 0 {
					timeout = sandboxes.DefaultTimeout
				}
				if j.TimeoutSeconds != timeout || !j.Spec.Sandbox || j.Spec.Kind() != jobspec.KindSandbox {
					t.Errorf("timeout %d, spec %+v; want %d and a sandbox", j.TimeoutSeconds, j.Spec, timeout)
				}
				svcs, err := w.db.Service.Query().Where(service.JobID(j.ID)).All(fixture.Sys())
				if err != nil || len(svcs) != 1 {
					t.Fatalf("services %v, %v; want one", svcs, err)
				}
				s := svcs[0]
				var ports []jobspec.Port
				for _, p := range tc.in.Ports {
					ports = append(ports, jobspec.Port{Name: "p" + strconv.Itoa(p), Port: p})
				}
				if s.Name != sandboxes.ServiceName || s.Image != tc.image || !reflect.DeepEqual(s.Command, sandboxes.KeepAlive) ||
					(len(ports) > 0 || len(s.Ports) > 0) && !reflect.DeepEqual(s.Ports, ports) || (tc.in.CPU != 0 && s.CPU != tc.in.CPU) || (tc.in.MemoryMiB != 0 && s.MemoryMib != tc.in.MemoryMiB) ||
					(len(tc.in.Env) > 0 || len(s.Env) > 0) && !reflect.DeepEqual(s.Env, tc.in.Env) {
					t.Errorf("service %+v; want %s running %q with ports %v", s, sandboxes.ServiceName, tc.image, ports)
				}
			})
		}
	})
}

// TestCreateRefusals: a bad sandbox is a refusal naming the input's
// field, and writes nothing.
func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		building := w.blueprint(t, w.tn, "b", blueprint.StateBUILDING)
		failed := w.blueprint(t, w.tn, "c", blueprint.StateFAILED)
		theirs := w.blueprint(t, w.other, "d", blueprint.StateREADY)
		batch := w.tn.AddQueue(t, "batch")
		if err := w.db.Queue.UpdateOneID(batch.ID).SetMode(queue.ModeBatch).Exec(fixture.Sys()); err != nil {
			t.Fatal(err)
		}
		many := make([]int, 17)
		for i := range many {
			many[i] = 8000 + i
		}
		cases := []struct {
			name  string
			in    sandboxes.Input
			field string
			says  string
		}{
			{"port 0", sandboxes.Input{Ports: []int{0}}, "ports[0]", "between 1 and 65535"},
			{"port 65536", sandboxes.Input{Ports: []int{80, 65536}}, "ports[1]", "between 1 and 65535"},
			{"a port twice", sandboxes.Input{Ports: []int{80, 80}}, "ports[1]", "twice"},
			{"17 ports", sandboxes.Input{Ports: many}, "ports", "at most 16"},
			{"a negative timeout", sandboxes.Input{TimeoutSeconds: -1}, "timeoutSeconds", "86400"},
			{"a timeout over a day", sandboxes.Input{TimeoutSeconds: 86401}, "timeoutSeconds", "86400"},
			{"a blueprint's image by name", sandboxes.Input{Image: "levers9-bp/" + w.other.ID + ":" + theirs.Key}, "image", "blueprint"},
			{"a blueprint's image behind a registry", sandboxes.Input{Image: "docker.io/LEVERS9-BP/x:y"}, "image", "blueprint"},
			{"a blueprint and an image", sandboxes.Input{Blueprint: building.ID, Image: "debian"}, "image", "not both"},
			{"a blueprint still building", sandboxes.Input{Blueprint: building.ID}, "blueprint", "building"},
			{"a failed blueprint", sandboxes.Input{Blueprint: failed.ID}, "blueprint", "failed"},
			{"another tenant's blueprint", sandboxes.Input{Blueprint: theirs.ID}, "blueprint", "not found"},
			{"a batch-only queue", sandboxes.Input{Queue: "batch"}, "queue", "interactive"},
			{"an unknown queue", sandboxes.Input{Queue: "nope"}, "queue", "nope"},
			{"too much memory", sandboxes.Input{MemoryMiB: 1 << 40}, "memoryMiB", "between"},
			{"too many CPUs for the queue", sandboxes.Input{CPU: 4000}, "", "CPUs"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := w.tn.As(w.alice)
				if tc.in.Queue == "batch" {
					ctx = w.tn.AsAdmin() // alice may not use it at all
				}
				_, err := w.sb.Create(ctx, tc.in)
				var fe *fault.Error
				if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Message, tc.says) {
					t.Fatalf("error %v (%#v); want one on %q saying %q", err, fe, tc.field, tc.says)
				}
			})
		}
		t.Cleanup(func() {
			if n, err := w.db.Job.Query().Count(fixture.Sys()); err != nil || n != 0 {
				t.Errorf("%d jobs after refusals (%v); want none", n, err)
			}
		})
	})
}

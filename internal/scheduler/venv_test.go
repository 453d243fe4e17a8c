package scheduler_test

import (
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// addBlueprintJob inserts a pending job of kind with one service on a
// blueprint image, with a Venv in its spec when venv.
func (f *world) addBlueprintJob(t *testing.T, kind job.Kind, venv bool) string {
	t.Helper()
	key := strings.Repeat("ab", 32)
	image := "levers9-bp/" + f.ten + ":" + key
	sp := jobspec.Service{Name: "s0", Image: image, Command: []string{"python3"}, CPU: 1, MemoryMiB: 1024}
	if venv {
		sp.Venv = &wire.Venv{Key: key, Steps: []wire.BuildStep{{Kind: wire.StepPip, Packages: []string{"six"}}}}
	}
	j, err := f.db.Ent.Job.Create().SetTenantID(f.ten).SetEnvironmentID(f.env).SetKind(kind).
		SetSpec(jobspec.Job{Queue: "q", Sandbox: kind == job.KindSANDBOX, Services: []jobspec.Service{sp}}).
		SetQueueID(f.queue).SetOwnerID(f.user).SetCreatedAt(t0).SetStatusReason("waiting to be scheduled").Save(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	err = f.db.Ent.Service.Create().SetTenantID(f.ten).SetEnvironmentID(f.env).SetJobID(j.ID).SetName("s0").
		SetCPU(1).SetMemoryMib(1024).SetImage(image).Exec(f.sys)
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// A sandbox or function whose blueprint runs as a virtual environment may
// go to a node without containers; the same image without one may not,
// nor may a plain job that somehow carries one.
func TestScheduleVenvOnProcessNodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		kind   job.Kind
		venv   bool
		placed bool
	}{
		{"sandbox with a venv", job.KindSANDBOX, true, true},
		{"function with a venv", job.KindFUNCTION, true, true},
		{"sandbox without", job.KindSANDBOX, false, false},
		{"plain job with a venv", job.KindJOB, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) {
				f := newFixture(t, url)
				f.addNode(t, "proc", inv(8, 16*gib, nil), true, f.queue)
				id := f.addBlueprintJob(t, tc.kind, tc.venv)
				n := f.pass(t)
				if placed := n == 1; placed != tc.placed {
					t.Fatalf("placed %d, want placed %v", n, tc.placed)
				}
				if tc.placed {
					on(t, f, id, "proc")
				}
			})
		})
	}
}

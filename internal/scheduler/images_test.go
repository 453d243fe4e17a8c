package scheduler_test

import (
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
	"github.com/levers9/levers9/internal/wire"
)

// addBlueprint records a READY blueprint of the tenant whose image nodes
// hold, and returns its image.
func (f *world) addBlueprint(t *testing.T, key string, nodes ...string) string {
	t.Helper()
	image := "levers9-bp/" + f.ten + ":" + key
	f.addBlueprintRow(t, f.ten, f.user, key, image, nodes...)
	return image
}

func (f *world) addBlueprintRow(t *testing.T, tenantID, owner, key, image string, nodes ...string) {
	t.Helper()
	err := f.db.Ent.Blueprint.Create().SetTenantID(tenantID).SetKey(key).SetFirstKey(key).
		SetSteps([]wire.BuildStep{{Key: key, Kind: "REGISTRY", Ref: "python:3.12-slim"}}).
		SetImage(image).SetState("READY").SetOwnerID(owner).SetNodes(nodes).Exec(f.sys)
	if err != nil {
		t.Fatal(err)
	}
}

// Of two equal nodes a blueprint job lands on the one holding its image
// (Blueprint.nodes); holders of other images, or of no recorded blueprint,
// change nothing: the lower node ID wins as usual.
func TestSchedulePrefersNodesHoldingImages(t *testing.T) {
	t.Parallel()
	docker := inv(8, 16*gib, nil)
	docker.Runtime = inventory.RuntimeDocker
	for _, tc := range []struct {
		name string
		// setup records blueprints (second: the node the tie-break would
		// not pick) and returns the image the job runs.
		setup  func(t *testing.T, f *world, second string) string
		second bool // the job lands on the second node
	}{
		{"held by the second", func(t *testing.T, f *world, second string) string {
			return f.addBlueprint(t, "k1", second)
		}, true},
		{"no blueprint row", func(t *testing.T, f *world, second string) string {
			return "levers9-bp/" + f.ten + ":k1"
		}, false},
		{"another image held", func(t *testing.T, f *world, second string) string {
			f.addBlueprint(t, "k2", second)
			return f.addBlueprint(t, "k1")
		}, false},
		// A row of another tenant naming this tenant's image (no row
		// should; none may steer its jobs).
		{"another tenant's row", func(t *testing.T, f *world, second string) string {
			other := fixture.NewTenant(t, f.db, fixture.TenantOptions{Slug: "other"})
			image := "levers9-bp/" + f.ten + ":k1"
			f.addBlueprintRow(t, other.ID, other.Admin.ID, "k1", image, second)
			return image
		}, false},
		{"a registry image", func(t *testing.T, f *world, second string) string {
			f.addBlueprint(t, "k1", second)
			return "python:3.12"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) {
				f := newFixture(t, url)
				a := f.addNode(t, "a", docker, true, f.queue)
				b := f.addNode(t, "b", docker, true, f.queue)
				first, second := "a", "b"
				if b < a {
					first, second = "b", "a"
					a, b = b, a
				}
				image := tc.setup(t, f, b)
				ids := f.addJobs(t, []jobSpec{{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, image: image}}}})
				if n := f.pass(t); n != 1 {
					t.Fatalf("placed %d", n)
				}
				want := first
				if tc.second {
					want = second
				}
				on(t, f, ids[0], want)
			})
		})
	}
}

// A blueprint job on a later page of the pass still finds the holders of
// its image, even where another node is the tighter fit by then.
func TestScheduleHeldImagesOnLaterPages(t *testing.T) {
	t.Parallel()
	docker := inv(64, 64*gib, nil)
	docker.Runtime = inventory.RuntimeDocker
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url)
		a := f.addNode(t, "a", docker, true, f.queue)
		b := f.addNode(t, "b", docker, true, f.queue)
		holder := "b"
		if b < a {
			a, b, holder = b, a, "a"
		}
		image := f.addBlueprint(t, "k1", b)
		specs := make([]jobSpec, 100) // more than a first page, on the other node
		for i := range specs {
			specs[i] = jobSpec{queue: f.queue, priority: 1, created: t0, services: []svc{{cpu: 0.25, mem: 64}}}
		}
		specs = append(specs, jobSpec{queue: f.queue, created: t0, services: []svc{{cpu: 1, mem: gib, image: image}}})
		ids := f.addJobs(t, specs)
		if n := f.pass(t); n != len(specs) {
			t.Fatalf("placed %d of %d", n, len(specs))
		}
		if got := f.placedOn(t, ids[0]); got == holder {
			t.Fatalf("the first command job went to %s, the holder: the test proves nothing", got)
		}
		on(t, f, ids[len(ids)-1], holder)
	})
}

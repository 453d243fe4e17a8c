package blueprints_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// Only the build job's node uploads a blueprint's image; a node fetches
// it only for a job placed on it that runs it or builds from it, in the
// same tenant. Every refusal but a bad credential is the same 404.
func TestImages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		admin, sys := w.acme.AsAdmin(), fixture.Sys()
		c := w.jobs.DB.Ent
		n1 := w.acme.AddNode(t, fixture.Node{Name: "n1", Queues: []string{w.acme.DefaultQueue}})
		n2 := w.acme.AddNode(t, fixture.Node{Name: "n2", Queues: []string{w.acme.DefaultQueue}})
		cred1, cred2 := w.acme.NodeCredential(t, n1.ID), w.acme.NodeCredential(t, n2.ID)
		on := w.other.AddNode(t, fixture.Node{Name: "n1"})
		otherCred := w.other.NodeCredential(t, on.ID)

		bp := w.build(t, admin, w.steps("echo one"))
		w.place(t, bp.BuildJobID, n1.ID)
		// A second blueprint being built on n1 by another job.
		bp2 := w.build(t, admin, w.steps("echo two"))
		w.place(t, bp2.BuildJobID, n1.ID)
		// Other's blueprint of the same steps, built on its node.
		w.upload(t, w.other.AsAdmin(), "code", []byte("PK a zip of weights"))
		theirs := w.build(t, w.other.AsAdmin(), w.steps("echo one"))
		w.place(t, theirs.BuildJobID, on.ID)

		tar := bytes.Repeat([]byte("tar"), 5000)
		for _, tc := range []struct {
			name, key, cred, job string
			want                 int
		}{
			{"no credential", bp.Key, "", bp.BuildJobID, http.StatusUnauthorized},
			{"a bad credential", bp.Key, "nope", bp.BuildJobID, http.StatusUnauthorized},
			{"another node", bp.Key, cred2, bp.BuildJobID, http.StatusNotFound},
			{"another job of the node", bp.Key, cred1, bp2.BuildJobID, http.StatusNotFound},
			{"no job", bp.Key, cred1, "", http.StatusNotFound},
			{"another tenant's node", bp.Key, otherCred, bp.BuildJobID, http.StatusNotFound},
			{"a key of this tenant built by another job", theirs.Key, cred1, bp2.BuildJobID, http.StatusNotFound},
			{"an unknown key", "ab" + bp.Key[2:], cred1, bp.BuildJobID, http.StatusNotFound},
		} {
			if r := w.push(t, tc.key, tc.cred, tc.job, tar, 5); r.status != tc.want {
				t.Errorf("upload, %s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
			}
		}
		if got, _ := w.bp.Get(admin, bp.ID); got.State != blueprint.StateBUILDING {
			t.Fatal("a refused upload changed the blueprint")
		}
		// Other's own node uploads other's blueprint of the same key; acme's
		// stays as it is.
		if r := w.push(t, theirs.Key, otherCred, theirs.BuildJobID, []byte("theirs"), 5); r.status != http.StatusNoContent {
			t.Fatalf("other's upload: %d %s", r.status, r.body)
		}
		if got, _ := w.bp.Get(admin, bp.ID); got.State != blueprint.StateBUILDING {
			t.Fatal("another tenant's upload made acme's blueprint ready")
		}
		// The hash of a blob the tenant has of another kind (its COPY zip),
		// without the bytes: storing skips what the tenant already has, so
		// the export would be the zip, never read from the node.
		r := w.do(t, "POST", bp.Key, cred1, bp.BuildJobID, nil, map[string]string{"Levers9-Sha256": w.zip, wire.StepsBuiltHeader: "1"})
		if r.status != http.StatusBadRequest {
			t.Fatalf("a code blob's hash as the export: %d %s", r.status, r.body)
		}
		if got, _ := w.bp.Get(admin, bp.ID); got.State != blueprint.StateBUILDING {
			t.Fatal("a code blob became the blueprint's export")
		}
		// Content that is not its hash.
		r = w.do(t, "POST", bp.Key, cred1, bp.BuildJobID, tar, map[string]string{"Levers9-Sha256": bp.Key, wire.StepsBuiltHeader: "1"})
		if r.status != http.StatusBadRequest {
			t.Fatalf("a wrong hash: %d %s", r.status, r.body)
		}
		if r := w.push(t, bp.Key, cred1, bp.BuildJobID, tar, 9); r.status != http.StatusBadRequest {
			t.Fatalf("more steps built than there are: %d %s", r.status, r.body)
		}
		if r := w.push(t, bp.Key, cred1, bp.BuildJobID, tar, 2); r.status != http.StatusNoContent {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		// Once READY, not again.
		if r := w.push(t, bp.Key, cred1, bp.BuildJobID, tar, 2); r.status != http.StatusNotFound {
			t.Fatalf("second upload: %d %s", r.status, r.body)
		}
		if got, _ := w.bp.Get(admin, bp.ID); got.State != blueprint.StateREADY || got.StepsBuilt != 2 {
			t.Fatalf("after the upload: %+v", got)
		}

		// Jobs that fetch it: one running the image (as a function or a
		// sandbox would), bp2's build (cached by bp: same first steps).
		runs := func(image string, nodeID string) string {
			j := c.Job.Create().SetTenantID(w.acme.ID).SetEnvironmentID(w.acme.Env).
				SetQueueID(w.acme.DefaultQueue).SetOwnerID(w.acme.Admin.ID).SetStatus(job.StatusRunning).
				SetSpec(jobspec.Job{Queue: "default", Sandbox: true, Services: []jobspec.Service{{Name: "sandbox", Image: image}}}).
				SaveX(sys)
			c.Service.Create().SetTenantID(w.acme.ID).SetEnvironmentID(w.acme.Env).
				SetJobID(j.ID).SetName("sandbox").SetImage(image).SetNodeID(nodeID).SaveX(sys)
			return j.ID
		}
		user := runs(bp.Image, n2.ID)
		elsewhere := runs("python:3.12", n2.ID)
		if w.job(t, bp2.BuildJobID).Spec.Build.Cached != "" {
			t.Fatal("bp2 was submitted before bp was ready: it has no cache")
		}
		cachedBuild := w.build(t, admin, w.steps("echo three"))
		if w.job(t, cachedBuild.BuildJobID).Spec.Build.Cached != bp.Key {
			t.Fatal("a build after bp is ready is not cached by it")
		}
		w.place(t, cachedBuild.BuildJobID, n2.ID)
		for _, tc := range []struct {
			name, key, cred, job string
			want                 int
		}{
			{"a job running it", bp.Key, cred2, user, http.StatusOK},
			{"a build cached by it", bp.Key, cred2, cachedBuild.BuildJobID, http.StatusOK},
			{"its own build job", bp.Key, cred1, bp.BuildJobID, http.StatusOK},
			{"a job running another image", bp.Key, cred2, elsewhere, http.StatusNotFound},
			{"a job on another node", bp.Key, cred1, user, http.StatusNotFound},
			{"another tenant's node", bp.Key, otherCred, user, http.StatusNotFound},
			{"a blueprint still building", bp2.Key, cred1, bp2.BuildJobID, http.StatusNotFound},
			{"a bad credential", bp.Key, "nope", user, http.StatusUnauthorized},
		} {
			r := w.do(t, "GET", tc.key, tc.cred, tc.job, nil, nil)
			if r.status != tc.want {
				t.Errorf("download, %s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
				continue
			}
			if tc.want == http.StatusOK && !bytes.Equal(r.body, tar) {
				t.Errorf("download, %s: %d bytes, not the export", tc.name, len(r.body))
			}
		}
		got, _ := w.bp.Get(admin, bp.ID)
		if !slices.Equal(got.Nodes, []string{n1.ID, n2.ID}) {
			t.Fatalf("holders %v, want n1 and n2", got.Nodes)
		}

		// Other's node may not fetch acme's image even for a job of its own
		// that names it.
		ojob := c.Job.Create().SetTenantID(w.other.ID).SetEnvironmentID(w.other.Env).
			SetQueueID(w.other.DefaultQueue).SetOwnerID(w.other.Admin.ID).SetStatus(job.StatusRunning).
			SetSpec(jobspec.Job{Queue: "default", Sandbox: true, Services: []jobspec.Service{{Name: "sandbox", Image: bp.Image}}}).
			SaveX(sys)
		c.Service.Create().SetTenantID(w.other.ID).SetEnvironmentID(w.other.Env).
			SetJobID(ojob.ID).SetName("sandbox").SetNodeID(on.ID).SaveX(sys)
		if r := w.do(t, "GET", bp.Key, otherCred, ojob.ID, nil, nil); r.status != http.StatusNotFound {
			t.Fatalf("another tenant's job naming acme's image: %d", r.status)
		}
	})
}

// A snapshot is a BUILDING blueprint whose "build job" is the sandbox:
// its node uploads the committed image.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		admin, sys := w.acme.AsAdmin(), fixture.Sys()
		c := w.jobs.DB.Ent
		n1 := w.acme.AddNode(t, fixture.Node{Name: "n1", Queues: []string{w.acme.DefaultQueue}})
		cred := w.acme.NodeCredential(t, n1.ID)
		j := c.Job.Create().SetTenantID(w.acme.ID).SetEnvironmentID(w.acme.Env).
			SetQueueID(w.acme.DefaultQueue).SetOwnerID(w.acme.Admin.ID).SetStatus(job.StatusRunning).
			SetSpec(jobspec.Job{Queue: "default", Sandbox: true, Services: []jobspec.Service{{Name: "sandbox", Image: "python:3.12"}}}).
			SaveX(sys)
		c.Service.Create().SetTenantID(w.acme.ID).SetEnvironmentID(w.acme.Env).
			SetJobID(j.ID).SetName("sandbox").SetNodeID(n1.ID).SaveX(sys)
		snap, err := w.bp.NewSnapshot(admin, j)
		if err != nil {
			t.Fatal(err)
		}
		other, err := w.bp.NewSnapshot(admin, j)
		if err != nil || other.Key == snap.Key {
			t.Fatalf("a second snapshot: %v, same key %v", err, other.Key == snap.Key)
		}
		if snap.Source != blueprint.SourceSNAPSHOT || snap.State != blueprint.StateBUILDING || snap.BuildJobID != j.ID ||
			snap.Image != "levers9-bp/"+w.acme.ID+":"+snap.Key || snap.OwnerID != w.acme.Admin.ID {
			t.Fatalf("snapshot: %+v", snap)
		}
		tar := []byte("committed")
		if r := w.push(t, snap.Key, cred, j.ID, tar, 1); r.status != http.StatusNoContent {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		if _, err := w.bp.Ready(admin, "blueprint", snap.ID); err != nil {
			t.Fatal(err)
		}
	})
}

package blueprints_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
)

func wantFault(t *testing.T, err error, code fault.Code, field string) {
	t.Helper()
	fs := fault.Classify(err)
	if len(fs) == 0 || fs[0].Code != code || (field != "" && fs[0].Field != field) {
		t.Fatalf("got %v, want %s on %q", err, code, field)
	}
}

// The same steps give the same blueprint and one build; a changed step
// builds again from the cache of the first; the image arrives only from
// the build job's node; another tenant shares nothing.
func TestBuild(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		admin := w.acme.AsAdmin()
		member := w.acme.As(w.acme.AddMember(t, "member"))

		first := w.build(t, admin, w.steps("echo one"))
		if first.State != blueprint.StateBUILDING || first.BuildJobID == "" || first.Source != blueprint.SourceBUILD {
			t.Fatalf("new blueprint: %+v", first)
		}
		if first.Image != "levers9-bp/"+w.acme.ID+":"+first.Key || first.FirstKey != first.Steps[0].Key || len(first.Steps) != 5 {
			t.Fatalf("image %s, first key %s, %d steps", first.Image, first.FirstKey, len(first.Steps))
		}
		j := w.job(t, first.BuildJobID)
		b := j.Spec.Build
		if b == nil || b.Blueprint != first.ID || b.Repository != "levers9-bp/"+w.acme.ID || len(b.Steps) != 5 || b.Cached != "" {
			t.Fatalf("build job spec: %+v", j.Spec)
		}
		if s := j.Spec.Services; len(s) != 1 || s[0].Name != "build" || s[0].Image != first.Image || s[0].Command[0] != "levers9-build" ||
			s[0].CPU != 2 || s[0].MemoryMiB != 4096 || j.Spec.TimeoutSeconds != 3600 || j.Name != "build "+first.Key[:12] {
			t.Fatalf("build job: %s %+v", j.Name, j.Spec)
		}
		if j.QueueID != w.acme.DefaultQueue {
			t.Fatalf("queue %s, want the default %s", j.QueueID, w.acme.DefaultQueue)
		}

		// Same steps, by the admin or a member: the same blueprint, no job.
		jobsBefore := w.countJobs(t)
		if again := w.build(t, member, w.steps("echo one")); again.ID != first.ID {
			t.Fatalf("same steps: %s, want %s", again.ID, first.ID)
		}
		if n := w.countJobs(t); n != jobsBefore {
			t.Fatalf("%d jobs after building the same steps, want %d", n, jobsBefore)
		}

		// The node of the build job uploads the export: READY.
		n1 := w.acme.AddNode(t, fixture.Node{Name: "n1", Queues: []string{w.acme.DefaultQueue}})
		cred := w.acme.NodeCredential(t, n1.ID)
		w.place(t, first.BuildJobID, n1.ID)
		tar := bytes.Repeat([]byte("layer"), 1000)
		if r := w.push(t, first.Key, cred, first.BuildJobID, tar, 5); r.status != http.StatusNoContent {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		ready, err := w.bp.Ready(member, "blueprint", first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ready.StepsBuilt != 5 || ready.ExportBytes != int64(len(tar)) || !slices.Equal(ready.Nodes, []string{n1.ID}) || ready.ReadyAt == nil {
			t.Fatalf("ready blueprint: %+v", ready)
		}
		h, err := w.bp.Holders(fixture.Sys(), []string{first.Image, "python:3.12"})
		if err != nil || !slices.Equal(h[first.Image], []string{n1.ID}) || len(h) != 1 {
			t.Fatalf("holders %v, %v", h, err)
		}

		// Step 3 changed: a new blueprint, cached up to step 2 by the first.
		second := w.build(t, admin, w.steps("echo two"))
		if second.ID == first.ID || second.FirstKey != first.FirstKey {
			t.Fatal("a changed step gave the same blueprint")
		}
		for i := range 3 {
			if second.Steps[i].Key != first.Steps[i].Key {
				t.Fatalf("step %d: key changed", i)
			}
		}
		sb := w.job(t, second.BuildJobID).Spec.Build
		if sb.Cached != first.Key || sb.CachedStep != 2 {
			t.Fatalf("cached %q at %d, want %q at 2", sb.Cached, sb.CachedStep, first.Key)
		}

		// Another tenant: its own blueprint and build for the same steps,
		// and nothing of acme's.
		otherZip := w.upload(t, w.other.AsAdmin(), "code", []byte("PK a zip of weights"))
		if otherZip != w.zip {
			t.Fatal("the zips differ")
		}
		theirs := w.build(t, w.other.AsAdmin(), w.steps("echo one"))
		if theirs.ID == first.ID || theirs.BuildJobID == first.BuildJobID || theirs.Key != first.Key ||
			theirs.Image == first.Image || w.job(t, theirs.BuildJobID).Spec.Build.Cached != "" {
			t.Fatalf("other tenant's blueprint: %+v", theirs)
		}
		if _, err := w.bp.Get(w.other.AsAdmin(), first.ID); err == nil {
			t.Fatal("another tenant got acme's blueprint")
		}
		_, err = w.bp.Ready(w.other.AsAdmin(), "blueprint", first.ID)
		wantFault(t, err, fault.BadUserInput, "blueprint")

		// A COPY of a zip the tenant has not uploaded.
		steps := w.steps("echo one")
		steps[4].Code = "ab" + w.zip[2:]
		_, err = w.bp.Build(admin, blueprints.BuildInput{Steps: steps})
		wantFault(t, err, fault.BadUserInput, "steps[4].code")
		// Nor a payload blob.
		steps[4].Code = w.upload(t, admin, "payload", []byte("not a zip"))
		_, err = w.bp.Build(admin, blueprints.BuildInput{Steps: steps})
		wantFault(t, err, fault.BadUserInput, "steps[4].code")
		// A queue that does not exist: no blueprint row.
		_, err = w.bp.Build(admin, blueprints.BuildInput{Steps: w.steps("echo three"), Queue: "nope"})
		wantFault(t, err, fault.NotFound, "queue")
		if n, _ := w.jobs.DB.Ent.Blueprint.Query().Count(fixture.Sys()); n != 3 {
			t.Fatalf("%d blueprints, want 3", n)
		}
	})
}

// A build whose job ended without an image fails, with the job's reason
// (or "without an image" when it completed); building again reuses the
// row with a new job.
func TestBuildFails(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		admin := w.acme.AsAdmin()
		bp := w.build(t, admin, w.steps("false"))
		if err := w.jobs.MarkEnded(fixture.Sys(), bp.BuildJobID, job.StatusError, "step 4/5 RUN false: exit 1", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		got, err := w.bp.Get(admin, bp.ID)
		if err != nil || got.State != blueprint.StateFAILED || got.Failure != "step 4/5 RUN false: exit 1" {
			t.Fatalf("after the job failed: %+v, %v", got, err)
		}
		_, err = w.bp.Ready(admin, "blueprint", bp.ID)
		wantFault(t, err, fault.BadUserInput, "blueprint")

		// A member builds it again.
		member := w.acme.As(w.acme.AddMember(t, "member"))
		again := w.build(t, member, w.steps("false"))
		if again.ID != bp.ID || again.State != blueprint.StateBUILDING || again.BuildJobID == bp.BuildJobID || again.Failure != "" {
			t.Fatalf("built again: %+v", again)
		}
		// This time the job completes without uploading.
		if err := w.jobs.MarkEnded(fixture.Sys(), again.BuildJobID, job.StatusComplete, "", w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		// Another's job is cancelled before it ran (as a user's cancel does).
		cancelled := w.build(t, admin, w.steps("sleep 1"))
		if _, err := w.jobs.Cancel(admin, cancelled.BuildJobID); err != nil {
			t.Fatal(err)
		}
		running := w.build(t, admin, w.steps("sleep 2"))
		if err := w.bp.Settle(fixture.Sys()); err != nil {
			t.Fatal(err)
		}
		// The rows as Settle left them (Get would settle them itself).
		row := func(id string) *ent.Blueprint {
			t.Helper()
			b, err := w.jobs.DB.Ent.Blueprint.Get(fixture.Sys(), id)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if got := row(bp.ID); got.State != blueprint.StateFAILED || got.Failure != blueprints.ReasonNoImage {
			t.Fatalf("after the job completed: %+v", got)
		}
		if got := row(cancelled.ID); got.State != blueprint.StateFAILED || got.Failure == "" {
			t.Fatalf("after its job was cancelled: %+v", got)
		}
		if got := row(running.ID); got.State != blueprint.StateBUILDING {
			t.Fatalf("a build under way was settled: %+v", got)
		}
		// Fail is scoped to the viewer's tenant.
		third := w.build(t, admin, w.steps("true"))
		if err := w.bp.Fail(w.other.AsAdmin(), third.ID, "nope"); err != nil {
			t.Fatal(err)
		}
		if got, _ := w.bp.Get(admin, third.ID); got.State != blueprint.StateBUILDING {
			t.Fatal("another tenant failed acme's blueprint")
		}
		if err := w.bp.Fail(admin, third.ID, "commit failed"); err != nil {
			t.Fatal(err)
		}
		if got, _ := w.bp.Get(admin, third.ID); got.State != blueprint.StateFAILED || got.Failure != "commit failed" {
			t.Fatalf("failed: %+v", got)
		}
	})
}

// A user's job may not name a blueprint's image.
func TestUserJobsMayNotNameBlueprintImages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		bp := w.build(t, w.acme.AsAdmin(), w.steps("echo"))
		_, err := w.jobs.Submit(w.acme.AsAdmin(), jobspec.Job{Queue: tenancy.DefaultQueue,
			Services: []jobspec.Service{{Name: "main", Image: bp.Image}}})
		wantFault(t, err, fault.BadUserInput, "services[0].image")
	})
}

// Builds of the same new steps at once: one blueprint, one live build
// job (the losers' jobs are cancelled). A member builds as well as an
// admin.
func TestBuildRace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		w := newWorld(t, url)
		member := w.acme.As(w.acme.AddMember(t, "member"))
		const n = 4
		ids := make(chan string, n)
		errs := make(chan error, n)
		for range n {
			go func() {
				bp, err := w.bp.Build(member, blueprints.BuildInput{Steps: w.steps("echo race")})
				if err != nil {
					errs <- err
					return
				}
				ids <- bp.ID
			}()
		}
		var got []string
		for range n {
			select {
			case err := <-errs:
				t.Fatalf("building: %v", err)
			case id := <-ids:
				got = append(got, id)
			}
		}
		slices.Sort(got)
		if got = slices.Compact(got); len(got) != 1 {
			t.Fatalf("%d blueprints for the same steps: %v", len(got), got)
		}
		if live := w.countJobs(t); live != 1 {
			t.Fatalf("%d live build jobs, want 1", live)
		}
		bp, err := w.bp.Get(member, got[0])
		if err != nil || w.job(t, bp.BuildJobID).Status == job.StatusCancelled {
			t.Fatalf("the blueprint's job was cancelled: %v", err)
		}
	})
}

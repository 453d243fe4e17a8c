package blueprints_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/imagesapi"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/wire"
	"github.com/levers9/levers9/storage"
)

// world is two tenants (acme, other) on one database, each with a node,
// the blueprints service over them and the images API in front of it.
type world struct {
	acme, other *fixture.Tenant
	jobs        *jobs.Service
	blobs       *blobs.Store
	bp          *blueprints.Service
	url         string // the images API
	clock       *fixture.Clock
	// zip is a code blob of acme, for COPY steps.
	zip string
}

func newWorld(t *testing.T, url string) *world {
	t.Helper()
	db := fixture.Open(t, url)
	clock := fixture.NewClock(time.Now())
	drv, err := storage.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	store := &blobs.Store{DB: db, Driver: drv, Log: fixture.Log()}
	js := fixture.Jobs(db, clock.Now)
	w := &world{
		acme: fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"}), other: fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "other"}),
		jobs: js, blobs: store, clock: clock,
		bp: &blueprints.Service{DB: db, Jobs: js, Blobs: store, Log: fixture.Log(), Now: clock.Now},
	}
	api := &imagesapi.API{Blueprints: w.bp, Log: fixture.Log()}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	w.url = srv.URL
	w.zip = w.upload(t, w.acme.AsAdmin(), blobs.KindCode, []byte("PK a zip of weights"))
	return w
}

func (w *world) upload(t *testing.T, ctx context.Context, kind string, b []byte) string {
	t.Helper()
	h := fmt.Sprintf("%x", sha256.Sum256(b))
	if _, err := w.blobs.Put(ctx, kind, h, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("uploading a %s blob: %v", kind, err)
	}
	return h
}

func (w *world) steps(run string) []wire.BuildStep {
	return []wire.BuildStep{
		{Kind: wire.StepRegistry, Ref: "python:3.12-slim"},
		{Kind: wire.StepApt, Packages: []string{"ffmpeg"}},
		{Kind: wire.StepPip, Packages: []string{"pillow"}},
		{Kind: wire.StepRun, Commands: []string{run}},
		{Kind: wire.StepCopy, Code: w.zip, Path: "/weights"},
	}
}

func (w *world) build(t *testing.T, ctx context.Context, steps []wire.BuildStep) *ent.Blueprint {
	t.Helper()
	bp, err := w.bp.Build(ctx, blueprints.BuildInput{Steps: steps})
	if err != nil {
		t.Fatalf("building: %v", err)
	}
	return bp
}

// place puts every service of job id on node.
func (w *world) place(t *testing.T, id, nodeID string) {
	t.Helper()
	if _, err := w.jobs.DB.Ent.Service.Update().Where(service.JobID(id)).SetNodeID(nodeID).Save(fixture.Sys()); err != nil {
		t.Fatal(err)
	}
}

func (w *world) job(t *testing.T, id string) *ent.Job {
	t.Helper()
	j, err := w.jobs.DB.Ent.Job.Get(fixture.Sys(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (w *world) countJobs(t *testing.T) int {
	t.Helper()
	n, err := w.jobs.DB.Ent.Job.Query().Where(job.StatusNEQ(job.StatusCancelled)).Count(fixture.Sys())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type reply struct {
	status int
	body   []byte
}

// do calls the images API as the node with cred for job.
func (w *world) do(t *testing.T, method, key, cred, jobID string, body []byte, header map[string]string) reply {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, w.url+"/agent/images/"+key, r)
	if err != nil {
		t.Fatal(err)
	}
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	req.Header.Set(wire.JobHeader, jobID)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, b}
}

// push uploads tar as the export of key.
func (w *world) push(t *testing.T, key, cred, jobID string, tar []byte, steps int) reply {
	t.Helper()
	return w.do(t, "POST", key, cred, jobID, tar, map[string]string{
		imagesapi.Sha256Header: fmt.Sprintf("%x", sha256.Sum256(tar)), wire.StepsBuiltHeader: fmt.Sprint(steps),
	})
}

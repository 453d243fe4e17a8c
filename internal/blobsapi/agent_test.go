package blobsapi_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// A node fetches the code of a function container placed on it, and
// nothing else: other nodes, jobs that run other code, jobs that are not
// function containers and blobs of the tenant all look missing.
func TestAgentCode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := newSite(t, url)
		c, sys := s.store.DB.Ent, fixture.Sys()
		code, hash := random(t, 200<<10)
		payload, payloadHash := random(t, 1000)
		// Uploaded by the SDK, size unknown (a reader net/http cannot size).
		for _, b := range []struct {
			kind, hash string
			data       []byte
		}{{blobs.KindCode, hash, code}, {blobs.KindPayload, payloadHash, payload}} {
			r := s.do(t, "PUT", "/api/blobs/"+b.hash+"?kind="+b.kind, bearer(s.member), io.MultiReader(bytes.NewReader(b.data)))
			if r.status != http.StatusCreated {
				t.Fatalf("upload %s: %d %s", b.kind, r.status, r.body)
			}
		}
		creds, nodeIDs := map[string]string{}, map[string]string{}
		for _, name := range []string{"gpu-1", "gpu-2"} {
			n := s.acme.AddNode(t, fixture.Node{Name: name, Offline: true})
			creds[name], nodeIDs[name] = s.acme.NodeCredential(t, n.ID), n.ID
		}
		newBuildJob := func(runner *wire.Runner, build *wire.Build) string {
			j := c.Job.Create().SetTenantID(s.acme.ID).SetEnvironmentID(s.acme.Env).
				SetQueueID(s.acme.DefaultQueue).SetOwnerID(s.acme.Admin.ID).SetStatus(job.StatusRunning).
				SetSpec(jobspec.Job{Queue: "default", Services: []jobspec.Service{{Name: "main", Command: []string{"python3"}}}, Runner: runner, Build: build}).
				SaveX(sys)
			c.Service.Create().SetTenantID(s.acme.ID).SetEnvironmentID(s.acme.Env).
				SetJobID(j.ID).SetName("main").SetNodeID(nodeIDs["gpu-1"]).SaveX(sys)
			return j.ID
		}
		newJob := func(runner *wire.Runner) string { return newBuildJob(runner, nil) }
		copyStep := func(code string) *wire.Build {
			return &wire.Build{Steps: []wire.BuildStep{{Kind: wire.StepRegistry, Ref: "python:3.12"}, {Kind: wire.StepCopy, Code: code, Path: "/w"}}}
		}
		build := newBuildJob(nil, copyStep(hash))
		otherBuild := newBuildJob(nil, copyStep(payloadHash[:63]+"0"))
		fn := newJob(&wire.Runner{ContainerID: "ctr_1", FunctionID: "fn_1", CodeHash: hash})
		otherCode := newJob(&wire.Runner{ContainerID: "ctr_2", FunctionID: "fn_2", CodeHash: payloadHash[:63] + "0"})
		plain := newJob(nil)
		// Another tenant's node, for a job it does not run.
		stranger := s.other.NodeCredential(t, s.other.AddNode(t, fixture.Node{Name: "gpu-1", Offline: true}).ID)

		for _, tc := range []struct {
			name, cred, job, hash string
			want                  int
		}{
			{"the job's node", creds["gpu-1"], fn, hash, http.StatusOK},
			{"another node", creds["gpu-2"], fn, hash, http.StatusNotFound},
			{"another tenant's node", stranger, fn, hash, http.StatusNotFound},
			{"a job running other code", creds["gpu-1"], otherCode, hash, http.StatusNotFound},
			{"not a function's job", creds["gpu-1"], plain, hash, http.StatusNotFound},
			{"a build copying it", creds["gpu-1"], build, hash, http.StatusOK},
			{"a build copying it, another node", creds["gpu-2"], build, hash, http.StatusNotFound},
			{"a build copying other code", creds["gpu-1"], otherBuild, hash, http.StatusNotFound},
			{"a payload of the tenant", creds["gpu-1"], fn, payloadHash, http.StatusNotFound},
			{"no job header", creds["gpu-1"], "", hash, http.StatusNotFound},
			{"an unknown job", creds["gpu-1"], "job_nope", hash, http.StatusNotFound},
			{"a user token", s.member, fn, hash, http.StatusUnauthorized},
			{"no credential", "", fn, hash, http.StatusUnauthorized},
		} {
			h := map[string]string{wire.JobHeader: tc.job}
			if tc.cred != "" {
				h["Authorization"] = "Bearer " + tc.cred
			}
			r := s.do(t, "GET", "/agent/code/"+tc.hash, h, nil)
			if r.status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
				continue
			}
			if tc.want == http.StatusOK && !bytes.Equal(r.body, code) {
				t.Errorf("%s: got %d bytes, not the %d of the code", tc.name, len(r.body), len(code))
			}
		}
	})
}

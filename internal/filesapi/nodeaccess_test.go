package filesapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/mounts"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// A node syncing a job's mounts reaches exactly the buckets the job mounts,
// for reading, and writes only the writable ones, only while it runs the
// job (or briefly after); any other node, job or bucket is refused.
func TestNodeActsForItsJobs(t *testing.T) {
	t.Parallel()
	eachStorage(t, func(t *testing.T, s *site) {
		ctx := context.Background()
		sys := viewer.SystemContext(ctx)
		c := s.db.Ent
		inputs := c.Bucket.Query().Where(bucket.Name("inputs")).OnlyX(sys)
		outputs := c.Bucket.Query().Where(bucket.Name("outputs")).OnlyX(sys)
		member := c.User.Query().Where(user.Email("member@acme.test")).OnlyX(sys)
		q, env := s.acme.DefaultQueue, s.acme.Env
		creds := map[string]string{}
		nodeIDs := map[string]string{}
		for _, name := range []string{"gpu-1", "gpu-2"} {
			n := s.acme.AddNode(t, fixture.Node{Name: name, Offline: true})
			creds[name], nodeIDs[name] = s.acme.NodeCredential(t, n.ID), n.ID
		}
		newJob := func(ms ...jobspec.Mount) string {
			j := c.Job.Create().SetTenantID(inputs.TenantID).SetEnvironmentID(env).
				SetQueueID(q).SetOwnerID(member.ID).SetStatus(job.StatusRunning).
				SetSpec(jobspec.Job{Queue: "default", Services: []jobspec.Service{{Name: "main", Command: []string{"true"}}}, Mounts: ms}).
				SaveX(sys)
			c.Service.Create().SetTenantID(inputs.TenantID).SetEnvironmentID(env).
				SetJobID(j.ID).SetName("main").SetNodeID(nodeIDs["gpu-1"]).SaveX(sys)
			return j.ID
		}
		running := newJob(jobspec.Mount{Bucket: "inputs", Path: "/in", ReadOnly: true}, jobspec.Mount{Bucket: outputs.ID, Path: "/out"})
		ended := newJob(jobspec.Mount{Bucket: "outputs", Path: "/out"})
		c.Job.UpdateOneID(ended).SetStatus(job.StatusComplete).SetFinishedAt(time.Now().Add(-mounts.SyncGrace - time.Minute)).ExecX(sys)

		tests := []struct {
			name, node, job, method, path string
			want                          int
		}{
			{"write a writable mount", "gpu-1", running, "PUT", "/files/" + outputs.ID + "/result.txt", http.StatusCreated},
			{"read it back", "gpu-1", running, "GET", "/files/" + outputs.ID + "/result.txt", http.StatusOK},
			{"list a read-only mount", "gpu-1", running, "GET", "/files/" + inputs.ID + "/", http.StatusOK},
			{"write a read-only mount", "gpu-1", running, "PUT", "/files/" + inputs.ID + "/x", http.StatusForbidden},
			{"delete in a read-only mount", "gpu-1", running, "DELETE", "/files/" + inputs.ID + "/x", http.StatusForbidden},
			{"another node", "gpu-2", running, "GET", "/files/" + outputs.ID + "/result.txt", http.StatusForbidden},
			{"a job that ended long ago", "gpu-1", ended, "PUT", "/files/" + outputs.ID + "/late.txt", http.StatusForbidden},
			{"a bucket by name", "gpu-1", running, "GET", "/files/outputs/result.txt", http.StatusForbidden},
			{"an unknown job", "gpu-1", "job_nope", "GET", "/files/" + outputs.ID + "/result.txt", http.StatusForbidden},
			{"a user token as node", "member", running, "GET", "/files/" + outputs.ID + "/result.txt", http.StatusUnauthorized},
			{"no credential", "", running, "GET", "/files/" + outputs.ID + "/result.txt", http.StatusUnauthorized},
		}
		creds["member"] = s.member
		for _, tc := range tests {
			req, err := http.NewRequest(tc.method, s.url+tc.path, strings.NewReader("result"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.node != "" {
				req.Header.Set("Authorization", "Bearer "+creds[tc.node])
			}
			req.Header.Set(wire.JobHeader, tc.job)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.want)
			}
		}
	})
}

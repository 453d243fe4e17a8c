package blobsapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// AgentHandler serves /agent/code/: a node fetches the code package of a
// function container it runs, naming the job in the Levers9-Job header.
func (a *API) AgentHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agent/code/{hash}", a.code)
	mux.HandleFunc("/", a.notFound)
	return mux
}

func (a *API) code(w http.ResponseWriter, r *http.Request) {
	secret, ok := auth.ParseBearer(r.Header.Get("Authorization"))
	if !ok {
		a.fail(w, fault.New(fault.Unauthenticated, "send the node credential as Authorization: Bearer CREDENTIAL"))
		return
	}
	hash := r.PathValue("hash")
	tenantID, err := a.codeTenant(r.Context(), secret, r.Header.Get(wire.JobHeader), hash)
	if err != nil {
		a.fail(w, err)
		return
	}
	rc, size, err := a.cfg.Blobs.OpenForTenant(r.Context(), tenantID, hash)
	if err != nil {
		a.fail(w, err)
		return
	}
	defer rc.Close()
	a.serve(w, r, rc, size)
}

// codeTenant is the tenant whose code hash the node with credential may
// read for jobID: only when the job is placed on that node and is a
// function's container that runs that code, or a blueprint build with a
// COPY step of that zip. Every other case is the same NOT_FOUND, so a
// node learns nothing of other jobs or blobs.
func (a *API) codeTenant(ctx context.Context, credential, jobID, hash string) (string, error) {
	missing := fault.Missing(fmt.Sprintf("code %s of job %q", hash, jobID))
	j, _, err := PlacedJob(ctx, a.cfg.Blobs.DB.Ent, credential, jobID, missing)
	if err != nil {
		return "", err
	}
	if !readsCode(j.Spec, hash) {
		return "", missing
	}
	return j.TenantID, nil
}

// readsCode reports whether a job of spec reads code blob hash: a
// function's container its code package, a build its COPY steps' zips.
func readsCode(spec jobspec.Job, hash string) bool {
	if spec.Runner != nil {
		return spec.Runner.CodeHash == hash
	}
	if spec.Build != nil {
		for _, st := range spec.Build.Steps {
			if st.Kind == wire.StepCopy && st.Code == hash {
				return true
			}
		}
	}
	return false
}

// NodeJob is job jobID when the node with credential may act for it: the
// job is placed on that node and is a function's container (its spec has
// a Runner). An unknown credential is UNAUTHENTICATED; every other refusal
// is missing, whatever the reason, so a node learns nothing of other
// jobs. For the node's endpoints that serve only function containers
// (/agent/secrets); /agent/code serves builds too (PlacedJob).
func NodeJob(ctx context.Context, c *ent.Client, credential, jobID string, missing error) (*ent.Job, error) {
	j, _, err := PlacedJob(ctx, c, credential, jobID, missing)
	if err != nil {
		return nil, err
	}
	if j.Spec.Runner == nil {
		return nil, missing
	}
	return j, nil
}

// PlacedJob is job jobID, whatever its kind, and the ID of the node with
// credential, when a service of the job is placed on that node. An
// unknown credential is UNAUTHENTICATED; every other refusal is missing.
// The one look-up of a node credential for the node's job endpoints
// (NodeJob; blueprint images).
func PlacedJob(ctx context.Context, c *ent.Client, credential, jobID string, missing error) (*ent.Job, string, error) {
	sys := viewer.SystemContext(ctx)
	n, err := c.Node.Query().Where(node.CredentialHash(auth.HashSecret(credential))).Only(sys)
	if ent.IsNotFound(err) {
		return nil, "", fault.New(fault.Unauthenticated, "unknown or revoked node credential")
	}
	if err != nil {
		return nil, "", fmt.Errorf("looking up node credential: %w", err)
	}
	if jobID == "" {
		return nil, "", missing
	}
	j, err := c.Job.Query().Where(job.ID(jobID), job.HasServicesWith(service.NodeID(n.ID))).Only(sys)
	if ent.IsNotFound(err) {
		return nil, "", missing
	}
	if err != nil {
		return nil, "", fmt.Errorf("looking up job %s: %w", jobID, err)
	}
	return j, n.ID, nil
}

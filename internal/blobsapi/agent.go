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
// read for jobID: only when the job is placed on that node, is a
// function's container and runs that code. Every other case is the same
// NOT_FOUND, so a node learns nothing of other jobs or blobs.
func (a *API) codeTenant(ctx context.Context, credential, jobID, hash string) (string, error) {
	sys := viewer.SystemContext(ctx)
	c := a.cfg.Blobs.DB.Ent
	n, err := c.Node.Query().Where(node.CredentialHash(auth.HashSecret(credential))).Only(sys)
	if ent.IsNotFound(err) {
		return "", fault.New(fault.Unauthenticated, "unknown or revoked node credential")
	}
	if err != nil {
		return "", fmt.Errorf("looking up node credential: %w", err)
	}
	missing := fault.Missing(fmt.Sprintf("code %s of job %q", hash, jobID))
	if jobID == "" {
		return "", missing
	}
	j, err := c.Job.Query().Where(job.ID(jobID), job.HasServicesWith(service.NodeID(n.ID))).Only(sys)
	if ent.IsNotFound(err) {
		return "", missing
	}
	if err != nil {
		return "", fmt.Errorf("looking up job %s: %w", jobID, err)
	}
	if j.Spec.Runner == nil || j.Spec.Runner.CodeHash != hash {
		return "", missing
	}
	return j.TenantID, nil
}

// Package secretsapi is the node's door to the secrets of the function
// containers it runs:
//
//	GET /agent/secrets   {"env":[{"name","value"}]} for the job in Levers9-Job
//
// authenticated with the node credential. The agent asks right before it
// starts such a container and passes the values as the container's
// environment: they are never part of the job's spec, its logs or any
// other API.
package secretsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blobsapi"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/secrets"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// API serves /agent/secrets.
type API struct {
	Ent     *ent.Client
	Secrets *secrets.Service
	Log     *slog.Logger
}

// Response is the answer of GET /agent/secrets.
type Response struct {
	Env []wire.EnvVar `json:"env"`
}

// Handler serves GET /agent/secrets.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agent/secrets", a.get)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		a.fail(w, fault.New(fault.NotFound, "no such route: a node's secrets are at GET /agent/secrets"))
	})
	return mux
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	credential, ok := auth.ParseBearer(r.Header.Get("Authorization"))
	if !ok {
		a.fail(w, fault.New(fault.Unauthenticated, "send the node credential as Authorization: Bearer CREDENTIAL"))
		return
	}
	env, err := a.env(r.Context(), credential, r.Header.Get(wire.JobHeader))
	if err != nil {
		a.fail(w, err)
		return
	}
	if env == nil {
		env = []wire.EnvVar{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(Response{Env: env})
}

// env is the environment of job jobID's container for the node with
// credential: only for a function container placed on that node whose
// job has not ended (blobsapi.NodeJob's rule, as for its code). Every
// refusal is the same NOT_FOUND.
func (a *API) env(ctx context.Context, credential, jobID string) ([]wire.EnvVar, error) {
	missing := fault.Missing(fmt.Sprintf("secrets of job %.80q", jobID))
	j, err := blobsapi.NodeJob(ctx, a.Ent, credential, jobID, missing)
	if err != nil {
		return nil, err
	}
	if jobstate.Ended(j.Status) {
		return nil, missing
	}
	sys := viewer.SystemContext(ctx)
	rn := j.Spec.Runner
	// The names come from the function, which the job's container belongs
	// to. Only while it starts: the agent asks right before starting it,
	// and a node asking again once its runner is up would only be reading
	// values again (and filling the audit log).
	ctr, err := a.Ent.Container.Query().Where(container.ID(rn.ContainerID), container.JobID(j.ID), container.FunctionID(rn.FunctionID),
		container.StateEQ(container.StateSTARTING)).
		WithFunction().Only(sys)
	if ent.IsNotFound(err) {
		return nil, missing
	}
	if err != nil {
		return nil, fmt.Errorf("reading container %s: %w", rn.ContainerID, err)
	}
	f := ctr.Edges.Function
	if f == nil || f.TenantID != j.TenantID || f.EnvironmentID != j.EnvironmentID {
		return nil, missing
	}
	return a.Secrets.Env(ctx, secrets.Use{
		TenantID: f.TenantID, EnvironmentID: f.EnvironmentID, OwnerID: f.OwnerID,
		FunctionID: f.ID, ContainerID: ctr.ID, JobID: j.ID, Names: f.Secrets,
	})
}

// fail answers {"error": {"code", "message"}} with the error's status;
// internal errors are logged (they never hold values: Env's errors name
// secrets, not their contents).
func (a *API) fail(w http.ResponseWriter, err error) {
	fault.WriteJSON(w, a.Log, "secrets API", err)
}

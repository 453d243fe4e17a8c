package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/execution"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/user"
)

// nearbyJobIDs are the jobs of the lists (and the job) above the field
// being resolved, so that a page of jobs loads their executions or
// services in one query, not one per row.
func nearbyJobIDs(ctx context.Context) []string {
	var out []string
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		switch v := fc.Result.(type) {
		case *ent.Job:
			if v != nil {
				out = append(out, v.ID)
			}
		case []*ent.Job:
			for _, j := range v {
				if j != nil {
					out = append(out, j.ID)
				}
			}
		case *ent.JobConnection:
			if v != nil {
				out = appendEdgeJobs(out, v.Edges)
			}
		case []*ent.JobEdge:
			out = appendEdgeJobs(out, v)
		}
	}
	return out
}

func appendEdgeJobs(out []string, es []*ent.JobEdge) []string {
	for _, e := range es {
		if e != nil && e.Node != nil {
			out = append(out, e.Node.ID)
		}
	}
	return out
}

// jobExecutions are the last n executions of job id, newest first,
// loaded with those of the jobs around it.
func (r *Resolver) jobExecutions(ctx context.Context, id string, n int) ([]*ent.Execution, error) {
	kind := fmt.Sprintf("executions:%d", n)
	return loadBatched(ctx, kind, id, func() []string { return nearbyJobIDs(ctx) },
		func(ctx context.Context, ids []string) (map[string][]*ent.Execution, error) {
			return r.loadExecutions(ctx, ids, n)
		})
}

// loadExecutions reads the last n executions of each of ids. One query
// reads at most n per job in all; only when that limit is hit are the jobs
// left short read again one by one (a busy job may have crowded them out).
func (r *Resolver) loadExecutions(ctx context.Context, ids []string, n int) (map[string][]*ent.Execution, error) {
	newest := func(q *ent.ExecutionQuery) *ent.ExecutionQuery {
		return q.Order(ent.Desc(execution.FieldCreatedAt), ent.Desc(execution.FieldID))
	}
	limit := n * len(ids)
	xs, err := newest(r.Ent.Execution.Query().Where(execution.JobIDIn(ids...))).Limit(limit).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]*ent.Execution, len(ids))
	for _, id := range ids {
		out[id] = []*ent.Execution{}
	}
	for _, x := range xs {
		if len(out[x.JobID]) < n {
			out[x.JobID] = append(out[x.JobID], x)
		}
	}
	if len(xs) < limit {
		return out, nil
	}
	for _, id := range ids {
		if len(out[id]) < n {
			if out[id], err = newest(r.Ent.Execution.Query().Where(execution.JobID(id))).Limit(n).All(ctx); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// jobServices are job j's services: the eager-loaded edge when the query
// selected it, else loaded with those of the jobs around it.
func (r *Resolver) jobServices(ctx context.Context, j *ent.Job) ([]*ent.Service, error) {
	if s, err := j.Edges.ServicesOrErr(); err == nil {
		return s, nil
	}
	return loadBatched(ctx, "services", j.ID, func() []string { return nearbyJobIDs(ctx) },
		func(ctx context.Context, ids []string) (map[string][]*ent.Service, error) {
			ss, err := r.Ent.Service.Query().Where(service.JobIDIn(ids...)).All(ctx)
			if err != nil {
				return nil, err
			}
			out := map[string][]*ent.Service{}
			for _, s := range ss {
				out[s.JobID] = append(out[s.JobID], s)
			}
			return out, nil
		})
}

// blueprintBuildJob is blueprint b's build job, nil when the viewer may
// not see it; a page of blueprints reads theirs in one query.
func (r *Resolver) blueprintBuildJob(ctx context.Context, b *ent.Blueprint) (*ent.Job, error) {
	return loadBatched(ctx, "job", b.BuildJobID, func() []string { return nearbyBuildJobIDs(ctx) },
		func(ctx context.Context, ids []string) (map[string]*ent.Job, error) {
			js, err := r.Ent.Job.Query().Where(job.IDIn(ids...)).All(ctx)
			if err != nil {
				return nil, fmt.Errorf("reading build jobs: %w", err)
			}
			out := make(map[string]*ent.Job, len(js))
			for _, j := range js {
				out[j.ID] = j
			}
			return out, nil
		})
}

// nearbyBuildJobIDs are the build jobs of the blueprints above the field.
func nearbyBuildJobIDs(ctx context.Context) []string {
	var out []string
	add := func(b *ent.Blueprint) {
		if b != nil && b.BuildJobID != "" {
			out = append(out, b.BuildJobID)
		}
	}
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		switch v := fc.Result.(type) {
		case *ent.Blueprint:
			add(v)
		case *ent.BlueprintConnection:
			if v != nil {
				for _, e := range v.Edges {
					if e != nil {
						add(e.Node)
					}
				}
			}
		case []*ent.BlueprintEdge:
			for _, e := range v {
				if e != nil {
					add(e.Node)
				}
			}
		}
	}
	return out
}

// executionUser is who ran execution x, nil when the viewer may not see
// them; a job's executions read theirs in one query.
func (r *Resolver) executionUser(ctx context.Context, x *ent.Execution) (*ent.User, error) {
	return loadBatched(ctx, "user", x.UserID, func() []string { return nearbyExecUserIDs(ctx) },
		func(ctx context.Context, ids []string) (map[string]*ent.User, error) {
			us, err := r.Ent.User.Query().Where(user.IDIn(ids...)).All(ctx)
			if err != nil {
				return nil, fmt.Errorf("reading who ran commands: %w", err)
			}
			out := make(map[string]*ent.User, len(us))
			for _, u := range us {
				out[u.ID] = u
			}
			return out, nil
		})
}

// nearbyExecUserIDs are the users of the executions above the field.
func nearbyExecUserIDs(ctx context.Context) []string {
	var out []string
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		switch v := fc.Result.(type) {
		case *ent.Execution:
			if v != nil && v.UserID != "" {
				out = append(out, v.UserID)
			}
		case []*ent.Execution:
			for _, x := range v {
				if x != nil && x.UserID != "" {
					out = append(out, x.UserID)
				}
			}
		}
	}
	return out
}

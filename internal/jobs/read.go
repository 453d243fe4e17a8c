package jobs

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/viewer"
)

// ServicesOf is the services of the jobs among ids that the viewer may see,
// by job ID and in name order, in two queries whatever the number of jobs.
//
// The services are read with system rights by job ID alone, once the jobs
// are known to be the viewer's: with the privacy filter's tenant_id
// predicate added, SQLite picks the tenant_id index and reads every service
// of the tenant instead of the (job_id, name) index.
func (s *Service) ServicesOf(ctx context.Context, ids []string) (map[string][]*ent.Service, error) {
	out := map[string][]*ent.Service{}
	if len(ids) == 0 {
		return out, nil
	}
	visible, err := s.DB.Ent.Job.Query().Where(job.IDIn(ids...)).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("checking %d jobs: %w", len(ids), err)
	}
	if len(visible) == 0 {
		return out, nil
	}
	all, err := s.DB.Ent.Service.Query().Where(service.JobIDIn(visible...)).
		Order(ent.Asc(service.FieldName)).All(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("loading services of %d jobs: %w", len(visible), err)
	}
	for _, sv := range all {
		out[sv.JobID] = append(out[sv.JobID], sv)
	}
	return out, nil
}

// owns reports whether v may act on job j as its owner: the owner, or a
// tenant admin.
func owns(v *viewer.Viewer, j *ent.Job) bool { return v != nil && (j.OwnerID == v.UserID || v.Admin) }

// MayCancel reports whether v may cancel job j now, as Cancel decides: v
// owns it and the state machine lets a job of its status be cancelled.
func MayCancel(v *viewer.Viewer, j *ent.Job) bool {
	_, ok := jobstate.Next(jobstate.Cancelled, j.Status)
	return owns(v, j) && ok
}

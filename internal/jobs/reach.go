package jobs

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Reach is a running service of a job the viewer may see: what the relay
// connects users to.
type Reach struct {
	Job     *ent.Job
	Service *ent.Service
}

// Reach finds service svc of job jobID, both running, as the viewer in
// ctx may see them (NOT_FOUND otherwise).
func (s *Service) Reach(ctx context.Context, jobID, svc string) (Reach, error) {
	j, err := s.DB.Ent.Job.Query().Where(job.ID(jobID)).Only(ctx)
	if ent.IsNotFound(err) {
		return Reach{}, fault.Missing(fmt.Sprintf("job %.64q", jobID))
	}
	if err != nil {
		return Reach{}, fmt.Errorf("finding job %s: %w", jobID, err)
	}
	if j.Status != job.StatusRunning {
		return Reach{}, fault.New(fault.BadUserInput, "job %s is %s: only a running job's services can be reached", j.ID, strings.ToLower(string(j.Status)))
	}
	// The job is the viewer's to see: its service is read by ID.
	sv, err := s.DB.Ent.Service.Query().Where(service.JobID(j.ID), service.Name(svc)).Only(viewer.SystemContext(ctx))
	if ent.IsNotFound(err) {
		return Reach{}, fault.Missing(fmt.Sprintf("service %.64q of job %s", svc, j.ID))
	}
	if err != nil {
		return Reach{}, fmt.Errorf("finding service %s of job %s: %w", svc, j.ID, err)
	}
	if sv.Status != service.StatusRunning || sv.NodeID == "" {
		return Reach{}, fault.New(fault.BadUserInput, "service %s of job %s is %s, not running", sv.Name, j.ID, strings.ToLower(string(sv.Status)))
	}
	return Reach{Job: j, Service: sv}, nil
}

// HostPort is the host port of sv's port named port, or numbered port (its
// declared number or its host port).
func HostPort(sv *ent.Service, port string) (int, error) {
	name := port
	if n, err := strconv.Atoi(port); err == nil {
		name = ""
		for _, p := range sv.Ports {
			if p.Port == n && n != 0 {
				name = p.Name
			}
		}
		for _, p := range sv.HostPorts {
			if name == "" && p.Port == n {
				return p.Port, nil
			}
		}
	}
	for _, p := range sv.HostPorts {
		if name != "" && p.Name == name {
			return p.Port, nil
		}
	}
	var have []string
	for _, p := range sv.HostPorts {
		have = append(have, fmt.Sprintf("%s (%d)", p.Name, p.Port))
	}
	if len(have) == 0 {
		return 0, fault.Missing(fmt.Sprintf("port %.40q of service %s: it declares no ports", port, sv.Name))
	}
	return 0, fault.Missing(fmt.Sprintf("port %.40q of service %s: its ports are %s", port, sv.Name, strings.Join(have, ", ")))
}

package nodes

import (
	"github.com/levers9/levers9/ent"
)

// jobName is a running service's job as a link text: its name, else its ID.
func jobName(s *ent.Service) string {
	if s.Edges.Job != nil && s.Edges.Job.Name != "" {
		return s.Edges.Job.Name
	}
	return s.JobID
}

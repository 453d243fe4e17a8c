package nodes

import (
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ui/components"
)

// jobName is a running service's job as a link text: its name, else its ID.
func jobName(s *ent.Service) string {
	if s.Edges.Job != nil && s.Edges.Job.Name != "" {
		return s.Edges.Job.Name
	}
	return s.JobID
}

func withHint(f components.Field, hint string) components.Field {
	f.Hint = hint
	return f
}

func numeric(f components.Field, min string) components.Field {
	f.Type, f.Min, f.Required = "number", min, true
	return f
}

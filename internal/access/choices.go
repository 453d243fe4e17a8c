package access

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
)

// UsableProjects narrows q to the projects the viewer may charge: every
// project for tenant admins and internal work, for members those granted to
// one of their groups. It is the one rule behind IsProjectMember and every
// list of projects a user may pick.
func UsableProjects(ctx context.Context, q *ent.ProjectQuery) *ent.ProjectQuery {
	mine, all := viewerGroups(ctx)
	if all {
		return q
	}
	return q.Where(project.HasGroupsWith(mine))
}

// Choices is what a viewer may pick when submitting work: the queues it may
// use and the projects it may charge, each in name order.
type Choices struct {
	Queues   []*ent.Queue
	Projects []*ent.Project
}

// ChoicesOf reads the viewer's choices in two queries, whatever their number.
func ChoicesOf(ctx context.Context, c *ent.Client) (Choices, error) {
	qs, err := UsableQueues(ctx, c.Queue.Query()).Order(ent.Asc(queue.FieldName)).All(ctx)
	if err != nil {
		return Choices{}, fmt.Errorf("listing usable queues: %w", err)
	}
	ps, err := UsableProjects(ctx, c.Project.Query()).Order(ent.Asc(project.FieldName)).All(ctx)
	if err != nil {
		return Choices{}, fmt.Errorf("listing usable projects: %w", err)
	}
	return Choices{Queues: qs, Projects: ps}, nil
}

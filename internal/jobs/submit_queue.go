package jobs

import (
	"context"
	"fmt"

	"entgo.io/ent/dialect/sql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/fault"
)

// The look-ups below fold a check into the read it follows, so that a
// submission that passes costs one round trip per object: the query is
// narrowed by the rule (the same access.* predicate the separate check
// used) and only a miss, which is an error to report, asks again without
// it to tell NOT_FOUND from FORBIDDEN. Nothing is cached: every answer is
// read in the submitting transaction.

// usableQueue finds the queue named or numbered ref that the viewer may
// submit to. When noProject (the job names no project) it also asks
// whether the queue's tenant takes jobs without a project; noProjectOK is
// true only when that is known to be so (false means: ask the tenant).
func usableQueue(ctx context.Context, client *ent.Client, ref string, noProject bool) (q *ent.Queue, noProjectOK bool, err error) {
	byRef := queue.Or(queue.ID(ref), queue.Name(ref))
	if noProject {
		q, err = access.UsableQueues(ctx, client.Queue.Query().Where(byRef, tenantTakesNoProject())).Only(ctx)
		if err == nil {
			return q, true, nil
		}
		if !ent.IsNotFound(err) {
			return nil, false, fmt.Errorf("looking up queue %q: %w", ref, err)
		}
		// The tenant may require a project: checkProject says so in turn.
	}
	q, err = access.UsableQueues(ctx, client.Queue.Query().Where(byRef)).Only(ctx)
	if err == nil {
		return q, false, nil
	}
	if !ent.IsNotFound(err) {
		return nil, false, fmt.Errorf("looking up queue %q: %w", ref, err)
	}
	q, err = client.Queue.Query().Where(byRef).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, false, &fault.Error{Code: fault.NotFound, Field: "queue", Message: fmt.Sprintf("queue %q not found", ref)}
	}
	if err != nil {
		return nil, false, fmt.Errorf("looking up queue %q: %w", ref, err)
	}
	return nil, false, &fault.Error{Code: fault.Forbidden, Field: "queue", Message: fmt.Sprintf("none of your groups may use queue %s", q.Name)}
}

// tenantTakesNoProject matches queues whose tenant lets jobs name no
// project (queues have no tenant edge to say it with).
func tenantTakesNoProject() predicate.Queue {
	return func(s *sql.Selector) {
		t := sql.Table(tenant.Table)
		s.Where(sql.Exists(sql.Select(t.C(tenant.FieldID)).From(t).Where(sql.And(
			sql.ColumnsEQ(t.C(tenant.FieldID), s.C(queue.FieldTenantID)),
			sql.EQ(t.C(tenant.FieldRequireProject), false),
		))))
	}
}

// memberProject finds the project named or numbered ref of which the
// viewer is a member.
func memberProject(ctx context.Context, client *ent.Client, ref string) (*ent.Project, error) {
	byRef := project.Or(project.ID(ref), project.Name(ref))
	p, err := access.UsableProjects(ctx, client.Project.Query().Where(byRef)).Only(ctx)
	if err == nil {
		return p, nil
	}
	if !ent.IsNotFound(err) {
		return nil, fmt.Errorf("looking up project %q: %w", ref, err)
	}
	p, err = client.Project.Query().Where(byRef).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, &fault.Error{Code: fault.NotFound, Field: "project", Message: fmt.Sprintf("project %q not found", ref)}
	}
	if err != nil {
		return nil, fmt.Errorf("looking up project %q: %w", ref, err)
	}
	return nil, &fault.Error{Code: fault.Forbidden, Field: "project", Message: fmt.Sprintf("you are not a member of project %s", p.Name)}
}

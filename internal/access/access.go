// Package access answers who may use what. Access to queues, projects and
// buckets is granted to groups, never to single users; tenant admins may
// use everything in their tenant.
package access

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/membership"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/viewer"
)

// allowed reports whether the viewer may use what via matches, through one
// of its groups.
func allowed(ctx context.Context, c *ent.Client, via predicate.Group) (bool, error) {
	mine, all := viewerGroups(ctx)
	if all {
		return true, nil
	}
	ok, err := c.Group.Query().Where(mine, via).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("checking group access: %w", err)
	}
	return ok, nil
}

// viewerGroups matches the groups that grant the viewer access; all is true
// when the viewer may use everything (tenant admins, internal work).
func viewerGroups(ctx context.Context) (mine predicate.Group, all bool) {
	v := viewer.FromContext(ctx)
	switch {
	case v == nil:
		return group.IDIn(), false // no group: a missing viewer grants nothing
	case v.Admin || v.System:
		return nil, true
	}
	return group.HasMembershipsWith(membership.UserID(v.UserID)), false
}

// CanUseQueue reports whether the viewer may submit to queue id.
func CanUseQueue(ctx context.Context, c *ent.Client, id string) (bool, error) {
	ok, err := UsableQueues(ctx, c.Queue.Query().Where(queue.ID(id))).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("checking access to queue %s: %w", id, err)
	}
	return ok, nil
}

// UsableQueues narrows q to the queues the viewer may use: every queue for
// tenant admins and internal work, for members those granted to one of their
// groups. Lists of queues shown to users start here, so that a member sees
// exactly the queues CanUseQueue lets them submit to.
func UsableQueues(ctx context.Context, q *ent.QueueQuery) *ent.QueueQuery {
	mine, all := viewerGroups(ctx)
	if all {
		return q
	}
	return q.Where(queue.HasGroupsWith(mine))
}

// IsProjectMember reports whether the viewer may charge project id.
func IsProjectMember(ctx context.Context, c *ent.Client, id string) (bool, error) {
	ok, err := UsableProjects(ctx, c.Project.Query().Where(project.ID(id))).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("checking access to project %s: %w", id, err)
	}
	return ok, nil
}

// CanReadBucket reports whether the viewer may read bucket id. Writers can
// read too.
func CanReadBucket(ctx context.Context, c *ent.Client, id string) (bool, error) {
	return allowed(ctx, c, group.Or(
		group.HasReadableBucketsWith(bucket.ID(id)),
		group.HasWritableBucketsWith(bucket.ID(id)),
	))
}

// CanWriteBucket reports whether the viewer may write bucket id.
func CanWriteBucket(ctx context.Context, c *ent.Client, id string) (bool, error) {
	return allowed(ctx, c, group.HasWritableBucketsWith(bucket.ID(id)))
}

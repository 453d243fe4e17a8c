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

// ReadableBuckets narrows q to the buckets the viewer may read (writers
// can read too): every bucket for tenant admins and internal work, for
// members those granted to one of their groups. CanReadBucket is defined
// through it, so lists and checks agree.
func ReadableBuckets(ctx context.Context, q *ent.BucketQuery) *ent.BucketQuery {
	mine, all := viewerGroups(ctx)
	if all {
		return q
	}
	return q.Where(bucket.Or(bucket.HasReadGroupsWith(mine), bucket.HasWriteGroupsWith(mine)))
}

// WritableBuckets narrows q to the buckets the viewer may write.
func WritableBuckets(ctx context.Context, q *ent.BucketQuery) *ent.BucketQuery {
	mine, all := viewerGroups(ctx)
	if all {
		return q
	}
	return q.Where(bucket.HasWriteGroupsWith(mine))
}

// CanReadBucket reports whether the viewer may read bucket id.
func CanReadBucket(ctx context.Context, c *ent.Client, id string) (bool, error) {
	ok, err := ReadableBuckets(ctx, c.Bucket.Query().Where(bucket.ID(id))).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("checking read access to bucket %s: %w", id, err)
	}
	return ok, nil
}

// CanWriteBucket reports whether the viewer may write bucket id.
func CanWriteBucket(ctx context.Context, c *ent.Client, id string) (bool, error) {
	ok, err := WritableBuckets(ctx, c.Bucket.Query().Where(bucket.ID(id))).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("checking write access to bucket %s: %w", id, err)
	}
	return ok, nil
}

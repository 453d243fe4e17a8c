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

// viewerGroups matches the groups the viewer is a member of and that also
// satisfy via.
func allowed(ctx context.Context, c *ent.Client, via predicate.Group) (bool, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return false, nil
	}
	if v.Admin || v.System {
		return true, nil
	}
	ok, err := c.Group.Query().
		Where(group.HasMembershipsWith(membership.UserID(v.UserID)), via).
		Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("checking group access: %w", err)
	}
	return ok, nil
}

// CanUseQueue reports whether the viewer may submit to queue id.
func CanUseQueue(ctx context.Context, c *ent.Client, id string) (bool, error) {
	return allowed(ctx, c, group.HasQueuesWith(queue.ID(id)))
}

// IsProjectMember reports whether the viewer may charge project id.
func IsProjectMember(ctx context.Context, c *ent.Client, id string) (bool, error) {
	return allowed(ctx, c, group.HasProjectsWith(project.ID(id)))
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

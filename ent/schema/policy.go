package schema

import (
	"entgo.io/ent"

	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
)

// adminWrites is the policy of tenant objects that members read and only
// tenant admins change (queues, groups, projects, storages, buckets, nodes).
// Tenant isolation comes from the TenantMixin policy that runs before it.
func adminWrites() ent.Policy {
	return privacy.Policy{Mutation: privacy.MutationPolicy{rule.AdminOnly()}}
}

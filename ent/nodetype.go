package ent

import (
	"context"
	"fmt"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/environment"
	"github.com/levers9/levers9/ent/execution"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/functionmap"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/membership"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/secret"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/ids"
)

// tablesByPrefix maps ID prefixes (see the IDMixin of each schema) to tables.
var tablesByPrefix = map[string]string{
	"tok": apitoken.Table, "aud": auditevent.Table, "bkt": bucket.Table,
	"chg": charge.Table, "env": environment.Table, "grp": group.Table,
	"job": job.Table, "mbr": membership.Table, "node": node.Table,
	"inv": nodeinvite.Table, "prj": project.Table, "que": queue.Table,
	"svc": service.Table, "sto": storage.Table, "tnt": tenant.Table,
	"usr": user.Table,
	"app": app.Table, "fn": function.Table, "task": task.Table, "map": functionmap.Table, "ctr": container.Table,
	"sec": secret.Table, "bp": blueprint.Table, "ex": execution.Table,
}

// NodeType resolves the table of an ID from its prefix, for Noder.
func NodeType(_ context.Context, id string) (string, error) {
	if t, ok := tablesByPrefix[ids.Prefix(id)]; ok {
		return t, nil
	}
	return "", &NotFoundError{label: fmt.Sprintf("object %q", id)}
}

// Package admin registers the tenant admin pages, one package per area
// (queues, groups and users, projects and grants, storages and buckets,
// tenant settings, API tokens, the audit log), all behind app.Admin: a member gets 403,
// and ent privacy keeps every query inside the admin's tenant.
package admin

import (
	"net/http"

	"github.com/levers9/levers9/ui/admin/audit"
	"github.com/levers9/levers9/ui/admin/groups"
	"github.com/levers9/levers9/ui/admin/projects"
	"github.com/levers9/levers9/ui/admin/queues"
	"github.com/levers9/levers9/ui/admin/settings"
	"github.com/levers9/levers9/ui/admin/storages"
	"github.com/levers9/levers9/ui/admin/tokens"
	"github.com/levers9/levers9/ui/admin/users"
	"github.com/levers9/levers9/ui/app"
)

// Register adds every admin page and the Admin navigation link.
func Register(rt *app.Router) {
	rt.Nav("Admin", "/admin", app.Admin)
	rt.Handle("GET /admin", app.Admin, func(w http.ResponseWriter, r *http.Request) error {
		return app.SeeOther(w, r, "/admin/queues")
	})
	queues.Register(rt)
	groups.Register(rt)
	users.Register(rt)
	projects.Register(rt)
	storages.Register(rt)
	settings.Register(rt)
	tokens.Register(rt)
	audit.Register(rt)
}

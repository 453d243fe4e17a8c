// Package apps is the dashboard's serverless area: the environment's apps,
// an app's page (its deployments with their versions, URLs, task queues,
// schedules and secrets; its functions with their calls counted by state,
// its containers, recent calls and errors), an app's calls filtered by
// function and state (the dead letters), and one call's page with its
// cold-start phases. Everything is read through ent as the viewer, so the
// privacy rules keep other tenants' and environments' apps invisible.
package apps

import (
	"fmt"
	"net/http"
	"strconv"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// PageSize is how many apps the table shows at once.
const PageSize = 25

// Register adds the apps routes. fns answers the rules the pages show (why
// a call waits); nil leaves those out.
func Register(rt *app.Router, fns *functions.Service) {
	h := &handlers{rt: rt, fns: fns}
	rt.Nav("Apps", "/apps", app.Member)
	rt.Handle("GET /apps", app.Member, h.list)
	rt.Handle("GET /apps/{id}", app.Member, h.detail)
	rt.Handle("GET /apps/{id}/tasks", app.Member, h.tasks)
	rt.Handle("POST /apps/{id}/versions/{version}/stop", app.Member, h.stopVersion)
	rt.Handle("POST /apps/{id}/rollback", app.Member, h.rollback)
	rt.Handle("GET /tasks/{id}", app.Member, h.task)
	rt.Handle("POST /tasks/{id}/requeue", app.Member, h.requeue)
}

type handlers struct {
	rt  *app.Router
	fns *functions.Service
}

type listPage struct {
	Rows  []appRow
	Pager components.Page
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	// Newest first: the index on (tenant_id, environment_id, created_at)
	// serves the page.
	conn, err := c.App.Query().WithOwner().Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
		ent.WithAppOrder(&ent.AppOrder{Direction: entgql.OrderDirectionDesc, Field: ent.AppOrderFieldCreatedAt}))
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		ids = append(ids, e.Node.ID)
	}
	// One grouped query for the page, not one per app: functions by app,
	// version and kind, of which each app's live version counts.
	kinds := map[string]map[string]int{} // app ID → kind → functions of the live version
	if len(ids) > 0 {
		var rows []struct {
			AppID   string `json:"app_id"`
			Version int    `json:"version"`
			Kind    string `json:"kind"`
			Count   int    `json:"count"`
		}
		if err := c.Function.Query().Where(function.AppIDIn(ids...)).
			GroupBy(function.FieldAppID, function.FieldVersion, function.FieldKind).Aggregate(ent.Count()).Scan(ctx, &rows); err != nil {
			return fmt.Errorf("counting the apps' functions: %w", err)
		}
		live := make(map[string]int, len(conn.Edges))
		for _, e := range conn.Edges {
			live[e.Node.ID] = e.Node.LiveVersion
		}
		for _, row := range rows {
			if row.Version != live[row.AppID] {
				continue
			}
			if kinds[row.AppID] == nil {
				kinds[row.AppID] = map[string]int{}
			}
			kinds[row.AppID][row.Kind] += row.Count
		}
	}
	var p listPage
	for _, e := range conn.Edges {
		p.Rows = append(p.Rows, newAppRow(e.Node, kinds[e.Node.ID]))
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/apps", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " apps"
	return app.Render(w, r, http.StatusOK, listView(h.rt.Frame(r, "Apps"), p))
}

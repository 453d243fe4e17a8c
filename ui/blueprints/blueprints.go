// Package blueprints is the Blueprints page: the tenant's blueprints,
// newest first, with their state, key, steps (one line each), how many
// steps the last build ran, the build job and the exported image's size.
package blueprints

import (
	"fmt"
	"net/http"
	"strconv"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/ent"
	bps "github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// PageSize is how many blueprints the table shows at once.
const PageSize = 50

// Register adds the Blueprints page.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Blueprints", "/blueprints", app.Member)
	rt.Handle("GET /blueprints", app.Member, h.list)
}

type handlers struct{ rt *app.Router }

// row is one blueprint, formatted.
type row struct {
	ID, Key, State, Failure, Source string
	Steps                           []string
	Built, BuildJob, Size, Created  string
}

type listPage struct {
	Rows  []row
	Pager components.Page
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	conn, err := h.rt.Deps.DB.Ent.Blueprint.Query().Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
		ent.WithBlueprintOrder(&ent.BlueprintOrder{Direction: entgql.OrderDirectionDesc, Field: ent.BlueprintOrderFieldCreatedAt}))
	if err != nil {
		return fmt.Errorf("listing blueprints: %w", err)
	}
	var p listPage
	for _, e := range conn.Edges {
		b := e.Node
		rw := row{ID: b.ID, Key: b.Key, State: string(b.State), Failure: b.Failure, Source: string(b.Source),
			Built: fmt.Sprintf("%d of %d", b.StepsBuilt, len(b.Steps)), BuildJob: b.BuildJobID,
			Size: "—", Created: components.When(&b.CreatedAt)}
		if len(rw.Key) > 12 {
			rw.Key = rw.Key[:12]
		}
		if b.ExportBytes > 0 {
			rw.Size = components.Bytes(b.ExportBytes)
		}
		for _, s := range b.Steps {
			rw.Steps = append(rw.Steps, bps.Summary(s))
		}
		p.Rows = append(p.Rows, rw)
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/blueprints", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " blueprints"
	return app.Render(w, r, http.StatusOK, listView(h.rt.Frame(r, "Blueprints"), p))
}

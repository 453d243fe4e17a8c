// Package sandboxes is the Sandboxes page: the jobs of kind SANDBOX,
// newest first, with their state, owner, start, tunnels through the
// relay while they run, and a Terminate button (cancelling the job).
package sandboxes

import (
	"fmt"
	"net/http"
	"strconv"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/relayaddr"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// PageSize is how many sandboxes the table shows at once.
const PageSize = 50

// Register adds the Sandboxes page; Terminate posts to the job page's
// cancel (POST /jobs/{id}/cancel).
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Sandboxes", "/sandboxes", app.Member)
	rt.Handle("GET /sandboxes", app.Member, h.list)
}

type handlers struct{ rt *app.Router }

// tunnel is a declared port of a running sandbox through the relay.
type tunnel struct {
	Port int
	URL  string
}

// row is one sandbox, formatted.
type row struct {
	ID, Name, State, Owner, Started string
	Tunnels                         []tunnel
	CanTerminate                    bool
}

type listPage struct {
	Rows  []row
	Pager components.Page
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	conn, err := c.Job.Query().Where(job.KindEQ(job.KindSANDBOX)).WithServices().
		Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
			ent.WithJobOrder(&ent.JobOrder{Direction: entgql.OrderDirectionDesc, Field: ent.JobOrderFieldCreatedAt}))
	if err != nil {
		return fmt.Errorf("listing sandboxes: %w", err)
	}
	// The owners' emails: one query for the page.
	var owners []string
	for _, e := range conn.Edges {
		owners = append(owners, e.Node.OwnerID)
	}
	emails := map[string]string{}
	if len(owners) > 0 {
		us, err := c.User.Query().Where(user.IDIn(owners...)).Select(user.FieldID, user.FieldEmail).All(ctx)
		if err != nil {
			return fmt.Errorf("reading the sandboxes' owners: %w", err)
		}
		for _, u := range us {
			emails[u.ID] = u.Email
		}
	}
	v := viewer.FromContext(ctx)
	d := h.rt.Deps
	var p listPage
	for _, e := range conn.Edges {
		j := e.Node
		owner, ok := emails[j.OwnerID]
		if !ok {
			owner = "—" // a user the viewer may not see
		}
		rw := row{ID: j.ID, Name: j.Name, State: string(j.Status), Owner: owner, Started: components.When(j.StartedAt),
			CanTerminate: !jobs.Ended(j.Status) && jobs.MayCancel(v, j)}
		if rw.Name == "" {
			rw.Name = j.ID
		}
		if j.Status == job.StatusRunning {
			for _, s := range j.Edges.Services {
				for _, pt := range s.Ports {
					if pt.Port > 0 {
						rw.Tunnels = append(rw.Tunnels, tunnel{Port: pt.Port,
							URL: relayaddr.URL(d.PublicURL, d.RelayDomain, j.ID, s.Name, pt.Name)})
					}
				}
			}
		}
		p.Rows = append(p.Rows, rw)
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/sandboxes", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " sandboxes"
	return app.Render(w, r, http.StatusOK, listView(h.rt.Frame(r, "Sandboxes"), p))
}

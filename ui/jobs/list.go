// Package jobs is the dashboard's jobs area: the jobs table, a job's page
// with the detail panel of one service, its live logs, and cancelling.
package jobs

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs/jobstate"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// statuses are the filter's choices, in a job's order of life.
var statuses = jobstate.JobStates

// PageSize is how many jobs the table shows at once.
const PageSize = 25

// Register adds the jobs routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Jobs", "/jobs", app.Member)
	rt.Handle("GET /jobs", app.Member, h.list)
	rt.Handle("GET /jobs/{id}", app.Member, h.detail)
	rt.Handle("GET /jobs/{id}/logs", app.Member, h.logs)
	rt.Handle("GET /jobs/live", app.Member, h.listLive)
	rt.Handle("GET /jobs/{id}/live", app.Member, h.detailLive)
	rt.Handle("POST /jobs/{id}/cancel", app.Member, h.cancel)
}

type handlers struct{ rt *app.Router }

// filter is the table's filter, from the query string.
type filter struct {
	Status, Queue, Name string
}

func parseFilter(q url.Values) (filter, error) {
	f := filter{
		Status: q.Get("status"), Queue: strings.TrimSpace(q.Get("queue")), Name: strings.TrimSpace(q.Get("name")),
	}
	if f.Status != "" {
		if err := job.StatusValidator(job.Status(f.Status)); err != nil {
			return f, fault.Invalid("status", "unknown status %q", f.Status)
		}
	}
	return f, nil
}

// apply narrows q to the jobs the filter shows.
func (f filter) apply(q *ent.JobQuery) *ent.JobQuery {
	if f.Status != "" {
		q = q.Where(job.StatusEQ(job.Status(f.Status)))
	}
	if f.Queue != "" {
		q = q.Where(job.HasQueueWith(queue.Name(f.Queue)))
	}
	if f.Name != "" {
		q = q.Where(job.NameContainsFold(f.Name))
	}
	return q
}

type listPage struct {
	Filter   filter
	Rows     []row
	Total    int
	Pager    components.Page
	Queues   []components.Option
	Statuses []components.Option
	// Live is the URL of the stream keeping the rows current.
	Live string
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		return err
	}
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	conn, err := c.Job.Query().WithQueue().WithProject().WithOwner().
		Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
			// Newest first by ID: IDs grow with time, and the index on
			// (tenant_id, environment_id, id) then serves a page without
			// sorting every job of the tenant (created_at has no index).
			ent.WithJobOrder(&ent.JobOrder{Direction: entgql.OrderDirectionDesc, Field: ent.JobOrderFieldID}),
			ent.WithJobFilter(func(q *ent.JobQuery) (*ent.JobQuery, error) { return f.apply(q), nil }))
	if err != nil {
		return err
	}
	p := listPage{Filter: f, Total: conn.TotalCount}
	ids := make([]string, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		ids = append(ids, e.Node.ID)
	}
	services, err := h.rt.Deps.Jobs.ServicesOf(ctx, ids)
	if err != nil {
		return err
	}
	spent := map[string]billing.Tokens{}
	if len(ids) > 0 {
		totals, err := ledger.Totals(ctx, c.Charge.Query().Where(charge.JobIDIn(ids...)), ledger.ByJob)
		if err != nil {
			return err
		}
		for _, t := range totals {
			spent[t.Key] = t.Tokens
		}
	}
	now := time.Now()
	for _, e := range conn.Edges {
		p.Rows = append(p.Rows, newRow(e.Node, services[e.Node.ID], spent[e.Node.ID], now))
	}
	p.Live = liveListURL(f, ids, pg.After == nil && pg.Before == nil)
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/jobs", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " jobs"
	choices, err := access.ChoicesOf(ctx, c)
	if err != nil {
		return err
	}
	p.Queues = []components.Option{{Value: "", Label: "any queue"}}
	for _, q := range choices.Queues {
		p.Queues = append(p.Queues, components.Option{Value: q.Name, Label: q.Name})
	}
	p.Statuses = []components.Option{{Value: "", Label: "any status"}}
	for _, s := range statuses {
		p.Statuses = append(p.Statuses, components.Option{Value: string(s), Label: string(s)})
	}
	return app.Render(w, r, http.StatusOK, listView(h.rt.Frame(r, "Jobs"), p))
}

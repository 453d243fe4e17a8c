// Package jobs is the dashboard's jobs area: the jobs table, a job's page
// with the detail panel of one service, its live logs, and cancelling.
package jobs

import (
	"context"
	"fmt"
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
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// statuses are the filter's choices, in a job's order of life.
var statuses = []job.Status{job.StatusPending, job.StatusRunning, job.StatusComplete, job.StatusError, job.StatusCancelled}

// PageSize is how many jobs the table shows at once.
const PageSize = 25

// Register adds the jobs routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Jobs", "/jobs", app.Member)
	rt.Handle("GET /jobs", app.Member, h.list)
	rt.Handle("GET /jobs/{id}", app.Member, h.detail)
	rt.Handle("GET /jobs/{id}/logs", app.Member, h.logs)
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

// row is one job of the table.
type row struct {
	Job      *ent.Job
	Queue    string
	Project  string
	Tokens   billing.Tokens
	Duration string
}

type listPage struct {
	Filter   filter
	Rows     []row
	Total    int
	Pager    components.Page
	Queues   []components.Option
	Statuses []components.Option
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
	conn, err := c.Job.Query().WithQueue().WithProject().
		Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
			// Newest first by ID: IDs grow with time, and the index on
			// (tenant_id, environment_id, id) then serves a page without
			// sorting every job of the tenant (created_at has no index).
			ent.WithJobOrder(&ent.JobOrder{Direction: entgql.OrderDirectionDesc, Field: ent.JobOrderFieldID}),
			ent.WithJobFilter(func(q *ent.JobQuery) (*ent.JobQuery, error) {
				if f.Status != "" {
					q = q.Where(job.StatusEQ(job.Status(f.Status)))
				}
				if f.Queue != "" {
					q = q.Where(job.HasQueueWith(queue.Name(f.Queue)))
				}
				if f.Name != "" {
					q = q.Where(job.NameContainsFold(f.Name))
				}
				return q, nil
			}))
	if err != nil {
		return err
	}
	p := listPage{Filter: f, Total: conn.TotalCount}
	ids := make([]string, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		ids = append(ids, e.Node.ID)
	}
	services, err := servicesOf(ctx, c, ids)
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
		j := e.Node
		j.Edges.Services = services[j.ID]
		rw := row{Job: j, Tokens: spent[j.ID], Duration: components.Took(j.StartedAt, j.FinishedAt, now)}
		if j.Edges.Queue != nil {
			rw.Queue = j.Edges.Queue.Name
		}
		if j.Edges.Project != nil {
			rw.Project = j.Edges.Project.Name
		}
		p.Rows = append(p.Rows, rw)
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/jobs", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " jobs"
	queues, err := access.UsableQueues(ctx, c.Queue.Query()).Order(ent.Asc(queue.FieldName)).All(ctx)
	if err != nil {
		return err
	}
	p.Queues = []components.Option{{Value: "", Label: "any queue"}}
	for _, q := range queues {
		p.Queues = append(p.Queues, components.Option{Value: q.Name, Label: q.Name})
	}
	p.Statuses = []components.Option{{Value: "", Label: "any status"}}
	for _, s := range statuses {
		p.Statuses = append(p.Statuses, components.Option{Value: string(s), Label: string(s)})
	}
	return app.Render(w, r, http.StatusOK, listView(h.rt.Frame(r, "Jobs"), p))
}

// servicesOf loads the services of jobs ids, which the viewer's privacy
// rules already let through (the IDs come from the viewer's job query).
// It reads them by job ID alone: with the privacy filter's tenant_id
// predicate added, SQLite picks the tenant_id index and reads every service
// of the tenant instead of the (job_id, name) index.
func servicesOf(ctx context.Context, c *ent.Client, ids []string) (map[string][]*ent.Service, error) {
	out := map[string][]*ent.Service{}
	if len(ids) == 0 {
		return out, nil
	}
	all, err := c.Service.Query().Where(service.JobIDIn(ids...)).
		Order(ent.Asc(service.FieldName)).All(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("loading services of %d jobs: %w", len(ids), err)
	}
	for _, s := range all {
		out[s.JobID] = append(out[s.JobID], s)
	}
	return out, nil
}

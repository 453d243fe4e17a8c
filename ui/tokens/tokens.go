// Package tokens is the Tokens page: every charge the viewer may see,
// filterable by job, project, user, kind and time, with totals and
// balances. Members see their own charges, tenant admins all of the
// tenant's (ent privacy decides, as for the chargeTotals query).
package tokens

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
	"github.com/levers9/levers9/ent/project"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/charts"
	"github.com/levers9/levers9/ui/components"
)

// PageSize is how many charges a page lists.
const PageSize = 50

// Register adds the Tokens page.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Tokens", "/tokens", app.Member)
	rt.Handle("GET /tokens", app.Member, h.list)
}

type handlers struct{ rt *app.Router }

// filter is the charge filter from the query string.
type filter struct {
	Job, Project, User, Kind, From, To string
}

var kinds = []charge.Kind{charge.KindStart, charge.KindCompute, charge.KindStorage, charge.KindGrant, charge.KindAdjustment}

const dateLayout = "2006-01-02"

// apply narrows q to the filter; names are resolved to IDs by the caller.
func (f filter) apply(q *ent.ChargeQuery, projectID, userID string) (*ent.ChargeQuery, error) {
	if f.Job != "" {
		q = q.Where(charge.JobID(f.Job))
	}
	if f.Project != "" {
		q = q.Where(charge.ProjectID(projectID))
	}
	if f.User != "" {
		q = q.Where(charge.UserID(userID))
	}
	if f.Kind != "" {
		if err := charge.KindValidator(charge.Kind(f.Kind)); err != nil {
			return nil, fault.Invalid("kind", "unknown kind %q", f.Kind)
		}
		q = q.Where(charge.KindEQ(charge.Kind(f.Kind)))
	}
	if f.From != "" {
		t, err := time.Parse(dateLayout, f.From)
		if err != nil {
			return nil, fault.Invalid("from", "must be a date like 2026-01-31")
		}
		q = q.Where(charge.CreatedAtGTE(t))
	}
	if f.To != "" {
		t, err := time.Parse(dateLayout, f.To)
		if err != nil {
			return nil, fault.Invalid("to", "must be a date like 2026-01-31")
		}
		q = q.Where(charge.CreatedAtLT(t.AddDate(0, 0, 1))) // the whole day
	}
	return q, nil
}

func parseFilter(q url.Values) filter {
	g := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return filter{Job: g("job"), Project: g("project"), User: g("user"), Kind: g("kind"), From: g("from"), To: g("to")}
}

// balance is one payer's balance, formatted.
type balance struct {
	Payer, Tokens string
}

// total is one row of a grouping's totals, formatted.
type total struct {
	Key, Tokens, Count string
}

// totals is one grouping of the filtered charges.
type totals struct {
	Title string
	Rows  []total
}

// chargeRow is one charge of the table, formatted.
type chargeRow struct {
	When, Kind, Direction, Tokens string
	PaidBy, User                  string
	JobID                         string // empty when the charge has no job
	JobName                       string // the job's name, else its ID
	Period, Reason                string
}

type page struct {
	Filter   filter
	Charges  []chargeRow
	Totals   []totals
	Balances []balance
	Pager    components.Page
	Projects []components.Option
	Users    []components.Option
	Kinds    []components.Option
	// Charts are the spending per day by project, user and queue.
	Charts []charts.Bars
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	v := viewer.FromContext(ctx)
	f := parseFilter(r.URL.Query())
	pg, err := app.ParsePaging(r.URL.Query(), PageSize)
	if err != nil {
		return err
	}
	p := page{Filter: f}
	names := map[string]string{} // project and user IDs to names

	projects, err := c.Project.Query().Order(ent.Asc(project.FieldName)).All(ctx)
	if err != nil {
		return err
	}
	var projectID string
	p.Projects, projectID, err = choose(projects, func(pr *ent.Project) (string, string) { return pr.ID, pr.Name }, "project", f.Project, names)
	if err != nil {
		return err
	}
	users, err := c.User.Query().Order(ent.Asc(user.FieldEmail)).All(ctx)
	if err != nil {
		return err
	}
	var userID string
	p.Users, userID, err = choose(users, func(u *ent.User) (string, string) { return u.ID, u.Email }, "user", f.User, names)
	if err != nil {
		return err
	}
	p.Kinds = []components.Option{{Value: "", Label: "any kind"}}
	for _, k := range kinds {
		p.Kinds = append(p.Kinds, components.Option{Value: string(k), Label: string(k)})
	}

	base, err := f.apply(c.Charge.Query(), projectID, userID)
	if err != nil {
		return err
	}
	conn, err := base.Clone().Paginate(ctx, pg.After, pg.First, pg.Before, pg.Last,
		ent.WithChargeOrder(&ent.ChargeOrder{Direction: entgql.OrderDirectionDesc, Field: ent.ChargeOrderFieldCreatedAt}))
	if err != nil {
		return err
	}
	p.Pager.Prev, p.Pager.Next = app.PageLinks("/tokens", r.URL.Query(), conn.PageInfo)
	p.Pager.Summary = strconv.Itoa(conn.TotalCount) + " charges"

	groupings := []struct {
		title string
		by    ledger.Grouping
	}{{"By kind", ledger.ByKind}, {"By project", ledger.ByProject}, {"By user", ledger.ByUser}, {"By job", ledger.ByJob}}
	grouped := make([][]*ledger.Total, len(groupings))
	var jobIDs []string
	for i, g := range groupings {
		ts, err := ledger.Totals(ctx, base.Clone(), g.by)
		if err != nil {
			return err
		}
		grouped[i] = ts[:min(len(ts), 10)] // the largest ten; filter to see the rest
		if g.by == ledger.ByJob {
			for _, x := range grouped[i] {
				jobIDs = append(jobIDs, x.Key)
			}
		}
	}
	for _, e := range conn.Edges {
		jobIDs = append(jobIDs, e.Node.JobID)
	}
	// Jobs by name, not ID: one query for the page's and the totals' jobs.
	js, err := c.Job.Query().Where(job.IDIn(jobIDs...)).Select(job.FieldID, job.FieldName).All(ctx)
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.Name != "" {
			names[j.ID] = j.Name
		}
	}
	for _, e := range conn.Edges {
		p.Charges = append(p.Charges, describe(e.Node, names))
	}
	for i, g := range groupings {
		t := totals{Title: g.title}
		for _, x := range grouped[i] {
			t.Rows = append(t.Rows, total{Key: nameOf(names, x.Key), Tokens: ledger.EntryOf(x.Tokens).String(), Count: strconv.Itoa(x.Count)})
		}
		p.Totals = append(p.Totals, t)
	}

	qs, err := c.Queue.Query().Select(queue.FieldID, queue.FieldName).All(ctx)
	if err != nil {
		return err
	}
	queueNames := make(map[string]string, len(qs))
	for _, q := range qs {
		queueNames[q.ID] = q.Name
	}
	if p.Charts, err = h.spendingCharts(ctx, base, f, names, queueNames); err != nil {
		return err
	}

	own, err := h.rt.Deps.Ledger.Balance(ctx, ledger.Payer{UserID: v.UserID})
	if err != nil {
		return err
	}
	p.Balances = append(p.Balances, balance{Payer: "You (" + names[v.UserID] + ")", Tokens: ledger.Plain(own)})
	// The projects the viewer may charge, with their balances: two queries
	// however many projects there are.
	mine, err := access.UsableProjects(ctx, c.Project.Query()).Order(ent.Asc(project.FieldName)).All(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, len(mine))
	for i, pr := range mine {
		ids[i] = pr.ID
	}
	bs, err := h.rt.Deps.Ledger.ProjectBalances(ctx, ids)
	if err != nil {
		return err
	}
	for _, pr := range mine {
		p.Balances = append(p.Balances, balance{Payer: "Project " + pr.Name, Tokens: ledger.Plain(bs[pr.ID])})
	}
	return app.Render(w, r, http.StatusOK, view(h.rt.Frame(r, "Tokens"), p))
}

// describe formats charge ch for the table; names maps project and user IDs
// to names.
func describe(ch *ent.Charge, names map[string]string) chargeRow {
	e := ledger.EntryOf(ch.Tokens)
	row := chargeRow{
		When: components.When(&ch.CreatedAt), Kind: string(ch.Kind), Direction: string(e.Direction), Tokens: e.String(),
		PaidBy: nameOf(names, ch.UserID), User: nameOf(names, ch.UserID), JobID: ch.JobID, JobName: nameOf(names, ch.JobID), Reason: ch.Reason,
	}
	if ch.ProjectID != "" && ch.PayerKind == charge.PayerKindProject {
		row.PaidBy = "project " + nameOf(names, ch.ProjectID)
	}
	if ch.PeriodStart != nil {
		row.Period = components.When(ch.PeriodStart) + " – " + components.When(ch.PeriodEnd)
	}
	return row
}

// nameOf is the name of project, user or job id, or the ID when it is unknown.
func nameOf(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return id
}

// choose makes the options of a filter field ("any FIELD" first, then each
// item by name), records the items' names by ID, and returns the ID of the
// item named want; an unknown name is an error at the field.
func choose[T any](items []T, idName func(T) (string, string), field, want string, names map[string]string) ([]components.Option, string, error) {
	opts := []components.Option{{Value: "", Label: "any " + field}}
	var id string
	for _, it := range items {
		i, n := idName(it)
		names[i] = n
		opts = append(opts, components.Option{Value: n, Label: n})
		if n == want {
			id = i
		}
	}
	if want != "" && id == "" {
		return nil, "", fault.Invalid(field, "no %s %q", field, want)
	}
	return opts, id, nil
}

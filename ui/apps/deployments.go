package apps

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	entapp "github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/environment"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/viewer"
)

// nextRuns is how many coming ticks a schedule shows.
const nextRuns = 3

// appVersionView is one version of a deployed app: the unit a stop or a
// rollback acts on.
type appVersionView struct {
	Number  int
	Label   string // "v3"
	Live    bool   // the unversioned URLs reach it
	Serving bool
	Created string
}

// deploymentView is one deployment (a URL name) with its versions, newest
// first.
type deploymentView struct {
	Name     string
	Versions []versionView
}

// versionView is one function of a deployment in one version.
type versionView struct {
	FunctionID, Label, Kind string
	Number                  int
	Live, Serving           bool
	URLs                    []string
	Secrets                 []string
	// A task queue's PENDING items and dead letters, with the link to the
	// dead ones.
	Queue       bool
	Depth, Dead int
	DeadLink    string
	// A schedule: its expression, next ticks (serving versions only), last
	// tick with the task it ran and the ticks skipped.
	Cron, LastRun, LastTask string
	NextRuns                []string
	Skipped                 int
}

// deployments fills p's versions and deployments from a's functions (its
// edge, loaded) and their calls counted by state.
func (h *handlers) deployments(r *http.Request, a *ent.App, counts map[string]map[task.State]int, now time.Time, p *detailPage) error {
	ctx := r.Context()
	v := viewer.FromContext(ctx)
	fns := a.Edges.Functions
	p.CanManage = v != nil && (v.Admin || v.UserID == a.OwnerID) && !a.Ephemeral && a.State == entapp.StateDEPLOYED
	slug, env, err := h.publicNames(r, a)
	if err != nil {
		return err
	}
	base := strings.TrimRight(h.rt.Deps.PublicURL, "/")

	versions := map[int]*appVersionView{}
	groups := map[string]*deploymentView{}
	var order []string
	for _, f := range fns {
		serving := servingFn(a, f)
		av := versions[f.Version]
		if av == nil {
			av = &appVersionView{Number: f.Version, Label: "v" + strconv.Itoa(f.Version),
				Live: f.Version == a.LiveVersion && a.State != entapp.StateSTOPPED, Created: when(&f.CreatedAt)}
			versions[f.Version] = av
		}
		av.Serving = av.Serving || serving

		name := f.Deployment
		if name == "" {
			name = f.Name
		}
		d := groups[name]
		if d == nil {
			d = &deploymentView{Name: name}
			groups[name] = d
			order = append(order, name)
		}
		vv := versionView{FunctionID: f.ID, Number: f.Version, Label: "v" + strconv.Itoa(f.Version), Kind: string(f.Kind),
			Live: f.Version == a.LiveVersion && !a.Ephemeral && a.State != entapp.StateSTOPPED, Serving: serving,
			Secrets: f.Secrets}
		if a.Ephemeral {
			vv.Label = "ephemeral"
		}
		if serving {
			for _, path := range functions.Paths(a, f, slug, env) {
				vv.URLs = append(vv.URLs, base+path)
			}
		}
		switch f.Kind {
		case function.KindTASK_QUEUE:
			vv.Queue = true
			vv.Depth, vv.Dead = counts[f.ID][task.StatePENDING], counts[f.ID][task.StateDEAD]
			vv.DeadLink = "/apps/" + a.ID + "/tasks?" + url.Values{"function": {f.ID}, "state": {string(task.StateDEAD)}}.Encode()
		case function.KindCRON:
			vv.Cron, vv.LastRun, vv.LastTask, vv.Skipped = f.Cron, when(f.LastRunAt), f.LastRunTaskID, f.SkippedRuns
			if serving {
				for _, t := range functions.NextRuns(f.Cron, now, nextRuns) {
					vv.NextRuns = append(vv.NextRuns, when(&t))
				}
			}
		}
		d.Versions = append(d.Versions, vv)
	}
	slices.Sort(order)
	for _, name := range order {
		d := groups[name]
		slices.SortStableFunc(d.Versions, func(x, y versionView) int { return y.Number - x.Number })
		p.Deployments = append(p.Deployments, *d)
	}
	for _, av := range versions {
		p.Versions = append(p.Versions, *av)
	}
	slices.SortFunc(p.Versions, func(x, y appVersionView) int { return y.Number - x.Number })
	return nil
}

// servingFn reports whether f's version still answers: not stopped, in an
// app that is not.
func servingFn(a *ent.App, f *ent.Function) bool {
	return f.StoppedAt == nil && a.State != entapp.StateSTOPPED
}

// publicNames are the tenant slug and environment name public URLs carry,
// read only when a function of a is public.
func (h *handlers) publicNames(r *http.Request, a *ent.App) (slug, env string, err error) {
	if !slices.ContainsFunc(a.Edges.Functions, func(f *ent.Function) bool { return f.Public }) {
		return "", "", nil
	}
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	t, err := c.Tenant.Query().Where(tenant.ID(a.TenantID)).Select(tenant.FieldSlug).Only(ctx)
	if err != nil {
		return "", "", fmt.Errorf("reading the app's tenant: %w", err)
	}
	e, err := c.Environment.Query().Where(environment.ID(a.EnvironmentID)).Select(environment.FieldName).Only(ctx)
	if err != nil {
		return "", "", fmt.Errorf("reading the app's environment: %w", err)
	}
	return t.Slug, e.Name, nil
}

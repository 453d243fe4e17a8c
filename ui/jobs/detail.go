package jobs

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/relayaddr"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
)

// detailPage is a job with the panel of one of its services.
type detailPage struct {
	Job       jobView
	CanCancel bool
	// Selected is the service whose panel is open, or nil.
	Selected *panel
	Lines    []joblog.Line
	// Follow is the URL of the live log stream, empty once the job ended.
	Follow string
	// Live is the URL of the stream keeping the page's statuses current.
	Live string
	// Timeline is the job's phases drawn (helper D's JobTimeline).
	Timeline templ.Component
	// Execs are the commands run in its services, newest first.
	Execs []execRow
}

// panel is the open service, formatted.
type panel struct {
	ID, Name, Status, Node, ExitCode, Reason string
	// While it runs: its ports through the relay and the commands that
	// reach it (Attach only for a terminal the viewer may open).
	Ports               []portLink
	PortForward, Attach string
	Exec                string
}

// portLink is a service port opened through the relay.
type portLink struct {
	Name string
	Port int // on the node
	URL  string
}

func (h *handlers) detail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	j, err := c.Job.Query().Where(job.ID(r.PathValue("id"))).
		WithQueue().WithProject().WithOwner().WithServices(func(q *ent.ServiceQuery) { q.WithNode() }).
		Only(ctx)
	if err != nil {
		return err
	}
	p := detailPage{Job: describeJob(j, j.Edges.Services, time.Now()), CanCancel: jobs.MayCancel(viewer.FromContext(ctx), j),
		Live: "/jobs/" + j.ID + "/live", Timeline: JobTimeline(j, time.Now())}
	if p.Execs, err = execHistory(ctx, c, j.ID); err != nil {
		return err
	}
	// Without a choice the first service's panel opens, so its log shows
	// at once (services come in the order of the spec).
	name := r.URL.Query().Get("service")
	if name == "" && len(j.Edges.Services) > 0 {
		name = firstService(j)
	}
	var selected *ent.Service
	for _, s := range j.Edges.Services {
		if s.Name == name {
			selected = s
		}
	}
	if name != "" && selected == nil {
		return fault.Missing(fmt.Sprintf("service %q of job %s", name, j.ID))
	}
	if s := selected; s != nil {
		pn := describeService(s)
		p.Selected = &pn
		h.reach(p.Selected, j, s, viewer.FromContext(ctx))
		// The lines so far are in the page (it works without scripts); the
		// script follows on from the last one.
		var next int64 = 1
	read:
		for {
			lines, err := h.rt.Deps.Logs.Lines(ctx, j.ID, 0, next, joblog.MaxPage)
			if err != nil {
				return err
			}
			for _, l := range lines {
				if len(p.Lines) >= maxShownLines {
					break read
				}
				if l.Service == s.Name {
					p.Lines = append(p.Lines, l)
				}
				next = l.Seq + 1
			}
			if len(lines) < joblog.MaxPage {
				break
			}
		}
		p.Live += "?service=" + url.QueryEscape(s.Name)
		if !jobs.Ended(j.Status) {
			p.Follow = "/jobs/" + j.ID + "/logs?service=" + s.Name + "&from=" + itoa(next)
		}
	}
	return app.Render(w, r, http.StatusOK, detailView(h.rt.Frame(r, "Job "+j.Name), p))
}

// reach fills in how a running service is reached: its ports through the
// relay, port-forward, and the terminal commands the viewer may use.
func (h *handlers) reach(p *panel, j *ent.Job, s *ent.Service, v *viewer.Viewer) {
	if j.Status != job.StatusRunning || s.Status != service.StatusRunning {
		return
	}
	d := h.rt.Deps
	for _, pt := range s.HostPorts {
		p.Ports = append(p.Ports, portLink{Name: pt.Name, Port: pt.Port,
			URL: relayaddr.URL(d.PublicURL, d.RelayDomain, j.ID, s.Name, pt.Name)})
	}
	if len(p.Ports) > 0 {
		p.PortForward = fmt.Sprintf("levers9 port-forward %s %s:%s", j.ID, s.Name, p.Ports[0].Name)
	}
	if j.Edges.Queue == nil || jobs.TerminalRefusal(v, j, j.Edges.Queue.Mode) != nil {
		return
	}
	p.Exec = fmt.Sprintf("levers9 exec -it %s --service %s -- sh", j.ID, s.Name)
	for _, sp := range j.Spec.Services {
		if sp.Name == s.Name && sp.TTY {
			p.Attach = fmt.Sprintf("levers9 attach %s --service %s", j.ID, s.Name)
		}
	}
}

// maxShownLines bounds the lines a page carries; the rest are a download
// away through the API.
const maxShownLines = 5000

func (h *handlers) cancel(w http.ResponseWriter, r *http.Request) error {
	j, err := h.rt.Deps.Jobs.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	h.rt.Flash(r, "Job "+displayName(j)+" cancelled.")
	return app.SeeOther(w, r, "/jobs/"+j.ID)
}

// describeService formats service s, its node edge read when loaded.
func describeService(s *ent.Service) panel {
	p := panel{ID: s.ID, Name: s.Name, Status: string(s.Status), Node: s.NodeID,
		ExitCode: exitCode(s.ExitCode), Reason: orDash(s.StatusReason)}
	if s.Edges.Node != nil {
		p.Node = s.Edges.Node.Name
	}
	p.Node = orDash(p.Node)
	return p
}

// firstService is the name of j's first service in its spec (its services
// edge loaded), or of the first loaded when the spec names none of them.
func firstService(j *ent.Job) string {
	for _, sp := range j.Spec.Services {
		for _, s := range j.Edges.Services {
			if s.Name == sp.Name {
				return s.Name
			}
		}
	}
	return j.Edges.Services[0].Name
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func exitCode(c *int) string {
	if c == nil {
		return "—"
	}
	return strconv.Itoa(*c)
}

package jobs

import (
	"fmt"
	"net/http"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// detailPage is a job with the panel of one of its services.
type detailPage struct {
	Job       *ent.Job
	Queue     string
	Project   string
	Duration  string
	CanCancel bool
	// Selected is the service whose panel is open, or nil.
	Selected *ent.Service
	Node     string
	Lines    []joblog.Line
	// Follow is the URL of the live log stream, empty once the job ended.
	Follow string
}

func (h *handlers) detail(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	j, err := c.Job.Query().Where(job.ID(r.PathValue("id"))).
		WithQueue().WithProject().WithServices(func(q *ent.ServiceQuery) { q.WithNode() }).
		Only(ctx)
	if err != nil {
		return err
	}
	v := viewer.FromContext(ctx)
	p := detailPage{Job: j, Duration: components.Took(j.StartedAt, j.FinishedAt, time.Now()),
		CanCancel: !joblog.Ended(j.Status) && (j.OwnerID == v.UserID || v.Admin)}
	if j.Edges.Queue != nil {
		p.Queue = j.Edges.Queue.Name
	}
	if j.Edges.Project != nil {
		p.Project = j.Edges.Project.Name
	}
	name := r.URL.Query().Get("service")
	if name == "" && len(j.Edges.Services) == 1 {
		name = j.Edges.Services[0].Name
	}
	for _, s := range j.Edges.Services {
		if s.Name == name {
			p.Selected = s
		}
	}
	if name != "" && p.Selected == nil {
		return fault.Missing(fmt.Sprintf("service %q of job %s", name, j.ID))
	}
	if s := p.Selected; s != nil {
		p.Node = s.NodeID
		if s.Edges.Node != nil {
			p.Node = s.Edges.Node.Name
		}
		// The lines so far are in the page (it works without scripts); the
		// script follows on from the last one.
		var next int64 = 1
	read:
		for {
			lines, err := joblog.Lines(ctx, c, j.ID, 0, next, joblog.MaxPage)
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
		if !joblog.Ended(j.Status) {
			p.Follow = "/jobs/" + j.ID + "/logs?service=" + s.Name + "&from=" + itoa(next)
		}
	}
	return app.Render(w, r, http.StatusOK, detailView(h.rt.Frame(r, "Job "+j.Name), p))
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

func displayName(j *ent.Job) string {
	if j.Name != "" {
		return j.Name
	}
	return j.ID
}

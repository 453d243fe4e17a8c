package submit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/access"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/components"
)

// Register adds the submission routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt}
	rt.Nav("Submit", "/submit", app.Member)
	rt.Handle("GET /submit", app.Member, h.show)
	rt.Handle("POST /submit", app.Member, h.submit)
	rt.Handle("GET /submit/estimate", app.Member, h.estimate)
}

type handlers struct{ rt *app.Router }

// queueInfo is a usable queue with its limits and prices, for people.
type queueInfo struct {
	Name, Limits, Prices string
	GPUTypes             []string
}

// page is everything the form shows.
type page struct {
	Form            form
	Queues          []queueInfo
	Selected        *queueInfo
	Projects        []components.Option
	ProjectRequired bool
	Mountable       []string
	Errors          fieldErrors
	Summary         []string
	Estimate        *billing.Estimate
	// EstimateProblems say why there is no estimate yet.
	EstimateProblems []string
}

func (h *handlers) show(w http.ResponseWriter, r *http.Request) error {
	p, err := h.load(r, defaultForm())
	if err != nil {
		return err
	}
	if p.Selected != nil {
		p.Form.Queue = p.Selected.Name
	}
	h.price(r, &p)
	// Nobody has typed anything yet: problems show once the user acts.
	p.EstimateProblems = nil
	return app.Render(w, r, http.StatusOK, view(h.rt.Frame(r, "Submit a job"), p))
}

// load reads what the form offers the viewer: the queues it may use, its
// projects, and the buckets mountable from the chosen queue.
func (h *handlers) load(r *http.Request, f form) (page, error) {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	p := page{Form: f, Errors: fieldErrors{}}
	choices, err := access.ChoicesOf(ctx, c)
	if err != nil {
		return p, err
	}
	for _, q := range choices.Queues {
		p.Queues = append(p.Queues, describe(q))
	}
	for i := range p.Queues {
		if p.Queues[i].Name == f.Queue || (f.Queue == "" && i == 0) {
			p.Selected = &p.Queues[i]
		}
	}
	for _, pr := range choices.Projects {
		p.Projects = append(p.Projects, components.Option{Value: pr.Name, Label: pr.Name})
	}
	t, err := c.Tenant.Get(ctx, viewer.FromContext(ctx).TenantID)
	if err != nil {
		return p, err
	}
	p.ProjectRequired = t.RequireProject
	if !p.ProjectRequired {
		p.Projects = append([]components.Option{{Value: "", Label: "none: my own tokens"}}, p.Projects...)
	}
	if p.Selected != nil {
		bs, err := h.rt.Deps.Files.Mountable(ctx, p.Selected.Name)
		if err != nil {
			return p, err
		}
		for _, b := range bs {
			p.Mountable = append(p.Mountable, b.Name)
		}
	}
	return p, nil
}

func describe(q *ent.Queue) queueInfo {
	qi := queueInfo{Name: q.Name,
		Limits: fmt.Sprintf("up to %d GPUs, %g CPUs, %d MiB per job", q.MaxGpusPerJob, q.MaxCPUPerJob, q.MaxMemoryMibPerJob)}
	for _, g := range q.GpuPrices {
		qi.GPUTypes = append(qi.GPUTypes, g.Type)
	}
	qi.Prices = queues.Prices(q)
	return qi
}

// price fills in the estimate, or the problems that prevent one.
func (h *handlers) price(r *http.Request, p *page) {
	_, spec, minutes, errs := parseForm(formValues(p.Form))
	if len(errs) > 0 {
		return
	}
	e, err := h.rt.Deps.Jobs.Estimate(r.Context(), spec, minutes)
	if err == nil {
		p.Estimate = &e
		return
	}
	for _, f := range fault.Classify(err) {
		p.EstimateProblems = append(p.EstimateProblems, f.Error())
	}
}

func (h *handlers) submit(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return fault.Invalid("form", "could not read the form")
	}
	f, spec, _, errs := parseForm(r.PostForm)
	switch r.PostForm.Get("action") {
	case "add":
		if len(f.Services) < MaxFormServices {
			f.Services = append(f.Services, serviceForm{CPU: "1", Memory: "512", GPUs: "0"})
		}
		return h.again(w, r, f, nil, http.StatusOK)
	case "refresh":
		return h.again(w, r, f, nil, http.StatusOK)
	}
	if len(errs) > 0 {
		return h.again(w, r, f, errs, http.StatusBadRequest)
	}
	j, err := h.rt.Deps.Jobs.Submit(r.Context(), spec)
	if err != nil {
		fs := fault.Classify(err)
		if len(fs) == 0 {
			return err
		}
		for _, fe := range fs {
			errs.add(fe.Field, fe.Message)
		}
		return h.again(w, r, f, errs, http.StatusBadRequest)
	}
	h.rt.Flash(r, "Job "+j.Name+" submitted.") // named at submission when the form left it empty
	return app.SeeOther(w, r, "/jobs/"+j.ID)
}

// again shows the form again as typed, with its errors and estimate.
func (h *handlers) again(w http.ResponseWriter, r *http.Request, f form, errs fieldErrors, status int) error {
	p, err := h.load(r, f)
	if err != nil {
		return err
	}
	for field, msgs := range errs {
		k := fieldKey(field, len(f.Services))
		if k == "" {
			for _, m := range msgs {
				p.Summary = append(p.Summary, strings.TrimPrefix(field+": "+m, ": "))
			}
			continue
		}
		p.Errors[k] = append(p.Errors[k], msgs...)
	}
	h.price(r, &p)
	return app.Render(w, r, status, view(h.rt.Frame(r, "Submit a job"), p))
}

// estimateAnswer is what the live estimate gets.
type estimateAnswer struct {
	Queue     string          `json:"queue"`
	Minutes   int             `json:"minutes"`
	StartFee  *billing.Tokens `json:"startFee,omitempty"`
	PerMinute *billing.Tokens `json:"perMinute,omitempty"`
	Total     *billing.Tokens `json:"total,omitempty"`
	Problems  []problem       `json:"problems,omitempty"`
	Mountable []string        `json:"mountable"`
	// GPUTypes are the types the queue prices, the form's choices.
	GPUTypes []string `json:"gpuTypes"`
}

// problem is one reason the form cannot be priced, at its field: the
// form's key of it (services[0].cpu), the field's element id and label.
type problem struct {
	Field   string `json:"field,omitempty"`
	ID      string `json:"id,omitempty"`
	Label   string `json:"label,omitempty"`
	Message string `json:"message"`
}

func newProblem(field string, services int, msg string) problem {
	p := problem{Message: msg, Field: fieldKey(field, services)}
	p.ID, p.Label = fieldOf(p.Field)
	return p
}

// estimate prices the form as it stands, with jobs.Estimate: the checks
// and the pricing function of a real submission, writing nothing.
func (h *handlers) estimate(w http.ResponseWriter, r *http.Request) error {
	f, spec, minutes, errs := parseForm(r.URL.Query())
	out := estimateAnswer{Queue: f.Queue, Minutes: minutes, Mountable: []string{}, GPUTypes: []string{}}
	for field, msgs := range errs {
		for _, m := range msgs {
			out.Problems = append(out.Problems, newProblem(field, len(f.Services), m))
		}
	}
	if len(errs) == 0 {
		e, err := h.rt.Deps.Jobs.Estimate(r.Context(), spec, minutes)
		if err != nil {
			fs := fault.Classify(err)
			if len(fs) == 0 {
				return err
			}
			for _, fe := range fs {
				out.Problems = append(out.Problems, newProblem(fe.Field, len(f.Services), fe.Message))
			}
		} else {
			out.StartFee, out.PerMinute, out.Total = &e.StartFee, &e.PerMinute, &e.Total
		}
	}
	if f.Queue != "" {
		choices, err := access.ChoicesOf(r.Context(), h.rt.Deps.DB.Ent)
		if err != nil {
			return err
		}
		for _, q := range choices.Queues {
			if q.Name == f.Queue {
				out.GPUTypes = append(out.GPUTypes, describe(q).GPUTypes...)
			}
		}
		if bs, err := h.rt.Deps.Files.Mountable(r.Context(), f.Queue); err == nil {
			for _, b := range bs {
				out.Mountable = append(out.Mountable, b.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(out)
}

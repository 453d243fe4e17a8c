// Package submit is the job submission form: queues the viewer may use
// with their limits, services and their resources, project, mounts of the
// buckets the chosen queue can mount, and a live cost estimate priced by
// the same function the server charges with.
package submit

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/levers9/levers9/internal/jobspec"
)

// MaxFormServices bounds the service fieldsets one form offers.
const MaxFormServices = 8

// serviceForm is one service's fields as typed.
type serviceForm struct {
	Name, Image, Command, CPU, Memory, GPUs, GPUTypes string
}

// mountForm is one offered bucket: whether it is mounted, where.
type mountForm struct {
	Path     string
	ReadOnly bool
}

// form is the submission form as typed, so it can be shown again with its
// errors.
type form struct {
	Name, Queue, Project, Minutes string
	Interactive                   bool
	Services                      []serviceForm
	Mounts                        map[string]mountForm // by bucket name, the checked ones
}

// fieldErrors are the problems of a form by field: the spec's field paths
// (services[0].gpus), as the domain reports them.
type fieldErrors map[string][]string

func (e fieldErrors) add(field, msg string) { e[field] = append(e[field], msg) }

func defaultForm() form {
	return form{Minutes: "60", Services: []serviceForm{{Name: "main", CPU: "1", Memory: "512", GPUs: "0"}}}
}

// parseForm reads the form from v and builds the spec. Values that are not
// numbers where numbers belong are reported on their fields; the spec then
// carries zero there and the domain checks the rest.
func parseForm(v url.Values) (form, jobspec.Job, int, fieldErrors) {
	errs := fieldErrors{}
	f := form{
		Name: strings.TrimSpace(v.Get("name")), Queue: v.Get("queue"), Project: v.Get("project"),
		Minutes: strings.TrimSpace(v.Get("minutes")), Mounts: map[string]mountForm{},
		Interactive: v.Get("interactive") == "on",
	}
	n, err := strconv.Atoi(v.Get("services"))
	if err != nil || n < 1 {
		n = 1
	}
	n = min(n, MaxFormServices)
	spec := jobspec.Job{Name: f.Name, Queue: f.Queue, Project: f.Project, Interactive: f.Interactive}
	for i := range n {
		key := func(k string) string { return fmt.Sprintf("services[%d].%s", i, k) }
		sf := serviceForm{
			Name: strings.TrimSpace(v.Get(key("name"))), Image: strings.TrimSpace(v.Get(key("image"))),
			Command: strings.TrimSpace(v.Get(key("command"))), CPU: strings.TrimSpace(v.Get(key("cpu"))),
			Memory: strings.TrimSpace(v.Get(key("memoryMiB"))), GPUs: strings.TrimSpace(v.Get(key("gpus"))),
		}
		f.Services = append(f.Services, sf)
		s := jobspec.Service{Name: sf.Name, Image: sf.Image}
		if sf.Command != "" {
			// One line, run by the shell: what people type at a prompt.
			s.Command = []string{"sh", "-c", sf.Command}
		}
		if sf.CPU != "" {
			if s.CPU, err = strconv.ParseFloat(sf.CPU, 64); err != nil {
				errs.add(key("cpu"), "must be a number of CPUs, like 0.5 or 4")
			}
		}
		if sf.Memory != "" {
			if s.MemoryMiB, err = strconv.ParseInt(sf.Memory, 10, 64); err != nil {
				errs.add(key("memoryMiB"), "must be a whole number of MiB")
			}
		}
		if sf.GPUs != "" {
			if s.GPUs, err = strconv.Atoi(sf.GPUs); err != nil {
				errs.add(key("gpus"), "must be a whole number")
			}
		}
		// Ticked boxes (the queue's priced types), or a typed list.
		var types []string
		for _, typed := range v[key("gpuTypes")] {
			for _, t := range strings.Split(typed, ",") {
				if t = strings.TrimSpace(t); t != "" && !slices.Contains(types, t) {
					types = append(types, t)
				}
			}
		}
		s.GPUTypes = types
		sf.GPUTypes = strings.Join(types, ",")
		f.Services[len(f.Services)-1].GPUTypes = sf.GPUTypes
		spec.Services = append(spec.Services, s)
	}
	names := v["mount"]
	sort.Strings(names)
	for _, b := range names {
		if b == "" {
			continue
		}
		m := mountForm{Path: strings.TrimSpace(v.Get("mountpath." + b)), ReadOnly: v.Get("mountro."+b) != ""}
		if m.Path == "" {
			m.Path = "/mnt/" + b
		}
		f.Mounts[b] = m
		spec.Mounts = append(spec.Mounts, jobspec.Mount{Bucket: b, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	minutes := 60
	if f.Minutes != "" {
		if minutes, err = strconv.Atoi(f.Minutes); err != nil || minutes < 0 {
			errs.add("minutes", "must be a whole number of minutes")
			minutes = 60
		}
	}
	return f, spec, minutes, errs
}

// formValues is f as a submitted form, to parse it again.
func formValues(f form) url.Values {
	v := url.Values{"name": {f.Name}, "queue": {f.Queue}, "project": {f.Project}, "minutes": {f.Minutes},
		"services": {strconv.Itoa(len(f.Services))}}
	if f.Interactive {
		v.Set("interactive", "on")
	}
	for i, s := range f.Services {
		key := func(k string) string { return fmt.Sprintf("services[%d].%s", i, k) }
		v.Set(key("name"), s.Name)
		v.Set(key("image"), s.Image)
		v.Set(key("command"), s.Command)
		v.Set(key("cpu"), s.CPU)
		v.Set(key("memoryMiB"), s.Memory)
		v.Set(key("gpus"), s.GPUs)
		v.Set(key("gpuTypes"), s.GPUTypes)
	}
	for b, m := range f.Mounts {
		v.Add("mount", b)
		v.Set("mountpath."+b, m.Path)
		if m.ReadOnly {
			v.Set("mountro."+b, "on")
		}
	}
	return v
}

// fieldKey is the form field a domain error's field path is shown at:
// "services[0].gpuTypes[1]" at services[0].gpuTypes, any mount problem at
// the mounts. "" means no field: the error goes to the summary.
func fieldKey(field string, services int) string {
	switch {
	case field == "name", field == "queue", field == "project", field == "minutes", field == "services", field == "interactive":
		return field
	case strings.HasPrefix(field, "mounts"):
		return "mounts"
	}
	for i := range services {
		p := fmt.Sprintf("services[%d].", i)
		if !strings.HasPrefix(field, p) {
			continue
		}
		k := strings.TrimPrefix(field, p)
		if j := strings.IndexAny(k, "[."); j >= 0 {
			k = k[:j]
		}
		switch k {
		case "name", "image", "command", "cpu", "memoryMiB", "gpus", "gpuTypes":
			return p + k
		case "args":
			return p + "command"
		}
		return p + "name" // env, ports: the form has no field for them
	}
	return ""
}

// Labels of the form's fields, the one mapping from the spec's field paths
// to words: errors read "Service 1 command: …", never
// "services[0].command: …". The form's fields show the same labels.
var jobFieldLabels = map[string]string{"name": "Job name", "queue": "Queue", "project": "Project",
	"minutes": "Estimate for minutes", "interactive": "Interactive", "services": "Services", "mounts": "Mounts"}

// serviceField is a service's field as the form labels it and as a
// message names it.
type serviceField struct{ Label, Noun string }

var serviceFields = map[string]serviceField{
	"name": {"Name", "name"}, "image": {"Image (optional)", "image"}, "command": {"Command (run by sh -c)", "command"},
	"cpu": {"CPUs", "CPUs"}, "memoryMiB": {"Memory (MiB)", "memory"}, "gpus": {"GPUs", "GPUs"}, "gpuTypes": {"GPU type(s)", "GPU types"},
}

// fieldOf is the element id and the label of the form field key (a
// fieldKey answer); id is "" for problems of the whole job, shown above
// the form rather than at a field.
func fieldOf(key string) (id, label string) {
	var i int
	if _, err := fmt.Sscanf(key, "services[%d].", &i); err == nil {
		_, k, _ := strings.Cut(key, "].")
		noun := serviceFields[k].Noun
		if noun == "" {
			noun = k
		}
		return fmt.Sprintf("svc%d-%s", i, k), fmt.Sprintf("Service %d %s", i+1, noun)
	}
	if key == "services" || key == "" {
		return "", jobFieldLabels[key]
	}
	return key, jobFieldLabels[key]
}

package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

// toStart is the Start the server sends for j once placed (as
// internal/tunnel builds it from the stored services), with bucket IDs in
// place of names.
func toStart(j Job) wire.Start {
	m := wire.Start{JobID: "job_1", TimeoutSeconds: j.TimeoutSeconds}
	for _, s := range j.Services {
		ss := wire.ServiceStart{Name: s.Name, Image: s.Image, Command: s.Command, Args: s.Args, CPU: s.CPU, MemoryMiB: s.MemoryMiB}
		for _, e := range s.Env {
			ss.Env = append(ss.Env, wire.EnvVar{Name: e.Name, Value: e.Value})
		}
		for _, p := range s.Ports {
			ss.Ports = append(ss.Ports, wire.Port{Name: p.Name, Port: p.Port})
		}
		for k := 0; k < s.GPUs; k++ {
			ss.GPUs = append(ss.GPUs, fmt.Sprint(k))
		}
		m.Services = append(m.Services, ss)
	}
	for i, mt := range j.Mounts {
		m.Mounts = append(m.Mounts, wire.Mount{Bucket: fmt.Sprintf("bkt_%d", i), Path: mt.Path, ReadOnly: mt.ReadOnly})
	}
	return m
}

// fieldsOf lists the fields an error of either package names.
func fieldsOf(err error) []string {
	var out []string
	var inv *wire.InvalidError
	if errors.As(err, &inv) {
		for _, f := range inv.Fields {
			out = append(out, f.Field)
		}
		return out
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var fe *FieldError
			if errors.As(e, &fe) {
				out = append(out, fe.Field)
			}
		}
	}
	return out
}

func hasField(err error, field string) bool {
	for _, f := range fieldsOf(err) {
		if f == field {
			return true
		}
	}
	return false
}

// TestSubmitAndWireAgree proves that each rule of a service is one rule:
// submit refuses it at the same field as the start message would, and
// what submit accepts makes a start the agent accepts.
func TestSubmitAndWireAgree(t *testing.T) {
	t.Parallel()
	two := func(j *Job) {
		j.Services = append(j.Services, Service{Name: "db", Image: "postgres:17"})
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Job)
		field string // "" when both accept
	}{
		{"valid", func(*Job) {}, ""},
		{"image only", func(j *Job) { j.Services[0].Command = nil; j.Services[0].Image = "python:3.12" }, ""},
		{"image with registry and digest", func(j *Job) {
			j.Services[0].Image = "registry.example.com:5000/team/app_x@sha256:" + strings.Repeat("ab", 32)
		}, ""},
		{"hyphenated service", func(j *Job) { j.Services[0].Name = "my-web-2" }, ""},
		{"63-letter service", func(j *Job) { j.Services[0].Name = strings.Repeat("a", 63) }, ""},
		{"64-letter service", func(j *Job) { j.Services[0].Name = strings.Repeat("a", 64) }, "services[0].name"},
		{"upper-case service", func(j *Job) { j.Services[0].Name = "Web" }, "services[0].name"},
		{"underscore service", func(j *Job) { j.Services[0].Name = "my_web" }, "services[0].name"},
		{"service ending in '-'", func(j *Job) { j.Services[0].Name = "web-" }, "services[0].name"},
		{"service starting with a digit", func(j *Job) { j.Services[0].Name = "1web" }, "services[0].name"},
		{"duplicate service", func(j *Job) { j.Services = append(j.Services, j.Services[0]); j.Services[1].Ports = nil }, "services[1].name"},
		{"no command nor image", func(j *Job) { j.Services[0].Command = nil }, "services[0].command"},
		{"upper-case image", func(j *Job) { j.Services[0].Image = "Python:3" }, "services[0].image"},
		{"image with a space", func(j *Job) { j.Services[0].Image = "python 3" }, "services[0].image"},
		{"NUL in a word", func(j *Job) { j.Services[0].Args = []string{"a\x00b"} }, "services[0].command"},
		{"huge word", func(j *Job) { j.Services[0].Args = []string{strings.Repeat("x", wire.MaxWordBytes+1)} }, "services[0].command"},
		{"too many words", func(j *Job) { j.Services[0].Args = make([]string, wire.MaxWords) }, "services[0].args"},
		{"bad env name", func(j *Job) { j.Services[0].Env[0].Name = "1X" }, "services[0].env[0].name"},
		{"env name with '='", func(j *Job) { j.Services[0].Env[0].Name = "A=B" }, "services[0].env[0].name"},
		{"reserved env", func(j *Job) { j.Services[0].Env[0].Name = "LEVERS9_JOB_ID" }, "services[0].env[0].name"},
		{"reserved env in lower case", func(j *Job) { j.Services[0].Env[0].Name = "levers9_x" }, "services[0].env[0].name"},
		{"long env name", func(j *Job) { j.Services[0].Env[0].Name = strings.Repeat("A", wire.MaxEnvNameLength+1) }, "services[0].env[0].name"},
		{"duplicate env", func(j *Job) { j.Services[0].Env = append(j.Services[0].Env, j.Services[0].Env[0]) }, "services[0].env[1].name"},
		{"NUL in a value", func(j *Job) { j.Services[0].Env[0].Value = "\x00" }, "services[0].env[0].value"},
		{"huge value", func(j *Job) { j.Services[0].Env[0].Value = strings.Repeat("v", wire.MaxEnvValueBytes+1) }, "services[0].env[0].value"},
		{"too many variables", func(j *Job) {
			for k := 0; k < wire.MaxEnv; k++ {
				j.Services[0].Env = append(j.Services[0].Env, EnvVar{Name: fmt.Sprintf("V%d", k)})
			}
		}, "services[0].env"},
		{"bad port name", func(j *Job) { j.Services[0].Ports[0].Name = "HTTP" }, "services[0].ports[0].name"},
		{"duplicate port name", func(j *Job) { j.Services[0].Ports = append(j.Services[0].Ports, Port{Name: "http"}) }, "services[0].ports[1].name"},
		{"port too high", func(j *Job) { j.Services[0].Ports[0].Port = 70000 }, "services[0].ports[0].port"},
		{"negative port", func(j *Job) { j.Services[0].Ports[0].Port = -1 }, "services[0].ports[0].port"},
		{"free port", func(j *Job) { j.Services[0].Ports[0].Port = 0 }, ""},
		{"same fixed port twice", func(j *Job) {
			two(j)
			j.Services[1].Ports = []Port{{Name: "pg", Port: 8080}}
		}, "services[1].ports[0].port"},
		{"two free ports", func(j *Job) {
			two(j)
			j.Services[0].Ports[0].Port = 0
			j.Services[1].Ports = []Port{{Name: "pg"}}
		}, ""},
		{"address variables collide", func(j *Job) {
			j.Services = []Service{
				{Name: "a-port", Command: []string{"x"}, Ports: []Port{{Name: "x"}}},
				{Name: "a", Command: []string{"x"}, Ports: []Port{{Name: "port_x"}}},
			}
		}, "services[1].ports[0].name"},
		{"host variable collides with a port", func(j *Job) {
			j.Services = []Service{
				{Name: "a", Command: []string{"x"}, Ports: []Port{{Name: "host"}}},
				{Name: "a-port-host", Command: []string{"x"}},
			}
		}, ""},
		{"host variable collides with a port variable", func(j *Job) {
			j.Services = []Service{
				{Name: "a", Command: []string{"x"}, Ports: []Port{{Name: "x_host"}}},
				{Name: "a-port-x", Command: []string{"x"}},
			}
		}, "services[1].name"},
		{"relative mount", func(j *Job) { j.Mounts[0].Path = "data" }, "mounts[0].path"},
		{"dotdot mount", func(j *Job) { j.Mounts[0].Path = "/data/../etc" }, "mounts[0].path"},
		{"root mount", func(j *Job) { j.Mounts[0].Path = "/" }, "mounts[0].path"},
		{"control character in a mount", func(j *Job) { j.Mounts[0].Path = "/da\nta" }, "mounts[0].path"},
		{"same mount twice", func(j *Job) { j.Mounts = append(j.Mounts, j.Mounts[0]) }, "mounts[1].path"},
		{"nested mounts", func(j *Job) { j.Mounts = append(j.Mounts, Mount{Bucket: "b", Path: "/data/sub"}) }, "mounts[1].path"},
		{"sibling mounts", func(j *Job) { j.Mounts = append(j.Mounts, Mount{Bucket: "b", Path: "/data2"}) }, ""},
		{"timeout too long", func(j *Job) { j.TimeoutSeconds = wire.MaxTimeout + 1 }, "timeoutSeconds"},
		{"too many services", func(j *Job) {
			for k := 0; k < wire.MaxServices; k++ {
				j.Services = append(j.Services, Service{Name: fmt.Sprintf("s%d", k), Command: []string{"x"}})
			}
		}, "services"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := valid()
			tc.edit(&j)
			submitErr := Validate(j)
			wireErr := toStart(j).Validate()
			if tc.field == "" {
				if submitErr != nil || wireErr != nil {
					t.Fatalf("want both to accept; submit: %v; wire: %v", submitErr, wireErr)
				}
				return
			}
			if !hasField(submitErr, tc.field) {
				t.Errorf("submit: err = %v, want one on %s", submitErr, tc.field)
			}
			if !hasField(wireErr, tc.field) {
				t.Errorf("wire: err = %v, want one on %s", wireErr, tc.field)
			}
		})
	}
}

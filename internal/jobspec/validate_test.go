package jobspec

import (
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

func valid() Job {
	return Job{
		Queue: "default",
		Services: []Service{{
			Name: "train", Command: []string{"python", "train.py"}, CPU: 1, MemoryMiB: 512,
			GPUs: 1, GPUTypes: []string{"H100", "A100"},
			Env: []EnvVar{{"SEED", "1"}}, Ports: []Port{{Name: "http", Port: 8080}},
		}},
		Mounts: []Mount{{Bucket: "data", Path: "/data", ReadOnly: true}},
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := Validate(valid()); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Job)
		field string
	}{
		{"no queue", func(j *Job) { j.Queue = " " }, "queue"},
		{"no services", func(j *Job) { j.Services = nil }, "services"},
		{"empty service name", func(j *Job) { j.Services[0].Name = "" }, "services[0].name"},
		{"bad service name", func(j *Job) { j.Services[0].Name = "Train_1" }, "services[0].name"},
		{"duplicate service", func(j *Job) { j.Services = append(j.Services, j.Services[0]) }, "services[1].name"},
		{"negative cpu", func(j *Job) { j.Services[0].CPU = -1 }, "services[0].cpu"},
		{"negative memory", func(j *Job) { j.Services[0].MemoryMiB = -1 }, "services[0].memoryMiB"},
		{"negative gpus", func(j *Job) { j.Services[0].GPUs = -2 }, "services[0].gpus"},
		{"gpus without type", func(j *Job) { j.Services[0].GPUTypes = nil }, "services[0].gpuTypes"},
		{"no command nor image", func(j *Job) { j.Services[0].Command = nil }, "services[0].command"},
		{"reserved env", func(j *Job) { j.Services[0].Env[0].Name = "LEVERS9_JOB_ID" }, "services[0].env[0].name"},
		{"bad port", func(j *Job) { j.Services[0].Ports[0].Port = 70000 }, "services[0].ports[0].port"},
		{"relative mount", func(j *Job) { j.Mounts[0].Path = "data" }, "mounts[0].path"},
		{"dotdot mount", func(j *Job) { j.Mounts[0].Path = "/data/../etc" }, "mounts[0].path"},
		{"root mount", func(j *Job) { j.Mounts[0].Path = "/" }, "mounts[0].path"},
		{"negative timeout", func(j *Job) { j.TimeoutSeconds = -1 }, "timeoutSeconds"},
	} {
		j := valid()
		tc.edit(&j)
		err := Validate(j)
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: err = %v, want one on %s", tc.name, err, tc.field)
		}
	}
}

func FuzzValidate(f *testing.F) {
	b, _ := json.Marshal(valid())
	f.Add(b)
	f.Add([]byte(`{"queue":"q","services":[{"name":"a","command":["x"],"cpu":-1}]}`))
	f.Add([]byte(`{"queue":"q","services":[{"name":"a-port","image":"busybox","ports":[{"name":"x"}]},{"name":"a","command":["x"],"ports":[{"name":"port_x","port":80}]}],"mounts":[{"bucket":"b","path":"/d"},{"bucket":"c","path":"/d/e"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var j Job
		if json.Unmarshal(data, &j) != nil {
			return
		}
		if Validate(j) != nil {
			return
		}
		// One definition: what submit accepts, the agent accepts.
		if err := toStart(j).Validate(); err != nil {
			t.Fatalf("submit accepted %+v but its start is refused: %v", j, err)
		}
		// Whatever passes must hold the invariants the rest of the system relies on.
		names := map[string]bool{}
		for _, s := range j.Services {
			if s.Name == "" || names[s.Name] || s.CPU < 0 || s.MemoryMiB < 0 || s.GPUs < 0 {
				t.Fatalf("accepted bad service %+v", s)
			}
			names[s.Name] = true
		}
		for _, m := range j.Mounts {
			if !strings.HasPrefix(m.Path, "/") || path.Clean(m.Path) != m.Path {
				t.Fatalf("accepted bad mount %+v", m)
			}
		}
	})
}

// A user's job may not name a blueprint's image (another tenant's, or its
// own without the blueprints layer's checks); builds, sandboxes and
// function containers are made by their layers, which put them there.
func TestValidateReservedImages(t *testing.T) {
	t.Parallel()
	for _, image := range []string{"levers9-bp/tn_1:abc", "Levers9-BP/tn_1:abc", "docker.io/levers9-bp/tn_1:abc"} {
		j := valid()
		j.Services[0].Image = image
		var fe *FieldError
		if err := Validate(j); !errors.As(err, &fe) || fe.Field != "services[0].image" {
			t.Errorf("%s: got %v, want a refusal on services[0].image", image, err)
		}
		j.Build = &wire.Build{}
		if err := Validate(j); err != nil {
			t.Errorf("%s in a build job: %v", image, err)
		}
	}
	if ReservedImage("levers9-bpx/y") || ReservedImage("python:3.12") {
		t.Error("an ordinary image is reserved")
	}
}

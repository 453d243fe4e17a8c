package runtime

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

func wireLogs(e LogEvent) wire.Logs {
	return wire.Logs{JobID: e.JobID, Lines: []wire.LogLine{e.Wire()}}
}

func TestSpecFromStart(t *testing.T) {
	t.Parallel()
	m := wire.Start{JobID: "job_1", TimeoutSeconds: 90, Services: []wire.ServiceStart{{
		Name: "api", Image: "img", Command: []string{"python"}, Args: []string{"-m", "http.server"},
		Env: []wire.EnvVar{{Name: "A", Value: "1"}}, Ports: []wire.Port{{Name: "http", Port: 0}, {Name: "x", Port: 9}},
		CPU: 1.5, MemoryMiB: 256, GPUs: []string{"0"},
	}}}
	want := JobSpec{ID: "job_1", Attempt: 1, Timeout: 90 * time.Second, Services: []ServiceSpec{{
		Name: "api", Image: "img", Command: []string{"python"}, Args: []string{"-m", "http.server"},
		Env: []EnvVar{{Name: "A", Value: "1"}}, Ports: []Port{{Name: "http"}, {Name: "x", Port: 9}},
		CPU: 1.5, MemoryMiB: 256, GPUs: []string{"0"},
	}}}
	if got := SpecFromStart(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestEventsToWire(t *testing.T) {
	t.Parallel()
	now := time.Now()
	code := 1
	st := StateEvent{JobID: "job_1", Service: "api", State: Failed, ExitCode: &code, Reason: "\xff" + strings.Repeat("é", wire.MaxReasonBytes), Time: now}
	m := st.Wire()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.State != wire.StateFailed || *m.ExitCode != 1 || len(m.Reason) > wire.MaxReasonBytes {
		t.Errorf("%+v", m)
	}
	run := StateEvent{JobID: "job_1", Service: "api", State: Running, PID: 7, Ports: []Port{{Name: "http", Port: 8080}}, Time: now}
	if got := run.Wire().Ports; !reflect.DeepEqual(got, []wire.Port{{Name: "http", Port: 8080}}) {
		t.Errorf("ports %+v", got)
	}
	l := LogEvent{JobID: "job_1", Service: "api", Stream: Stderr, Seq: 3, Time: now, Text: "x"}
	if got := l.Wire(); got != (wire.LogLine{Service: "api", Stream: wire.Stderr, Seq: 3, Time: now, Text: "x"}) {
		t.Errorf("%+v", got)
	}
}

package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func isState(service string, s State) func(Event) bool {
	return func(ev Event) bool {
		e, ok := ev.(StateEvent)
		return ok && e.Service == service && e.State == s
	}
}

// Not parallel: it sets a variable in the agent's own environment.
func TestEnvironment(t *testing.T) {
	t.Setenv("LEVERS9_NODE_SECRET", "must not leak")
	t.Setenv("PWD", "/agent/dir")
	p := newProcess(t)
	web := helperService(t, "web-api", "env")
	web.Env = append(web.Env, EnvVar{Name: "GREETING", Value: "hello world=1"}, EnvVar{Name: "PATH", Value: os.Getenv("PATH") + ":/opt/extra"})
	web.Ports = []Port{{Name: "http", Port: 0}, {Name: "admin_x", Port: 54321}}
	web.GPUs = []string{"0", "GPU-abc"}
	db := ServiceSpec{Name: "my-db", Command: []string{"true"}, Ports: []Port{{Name: "pg", Port: 0}}}
	c := start(t, p, JobSpec{ID: "job_env", Services: []ServiceSpec{web, db}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}

	running := map[string]StateEvent{}
	for _, name := range []string{"web-api", "my-db"} {
		st := states(evs, name)
		if len(st) != 3 || st[0].State != Starting || st[1].State != Running || st[2].State != Exited {
			t.Fatalf("%s states: %+v", name, st)
		}
		running[name] = st[1]
	}
	webPorts := running["web-api"].Ports
	if len(webPorts) != 2 || webPorts[0].Name != "http" || webPorts[0].Port == 0 || webPorts[1] != (Port{"admin_x", 54321}) {
		t.Fatalf("web-api ports %+v", webPorts)
	}
	dbPort := running["my-db"].Ports[0].Port
	if dbPort == 0 || dbPort == webPorts[0].Port {
		t.Fatalf("my-db port %d, web-api http %d", dbPort, webPorts[0].Port)
	}

	dir := filepath.Join(p.cfg.Root, "job_env", "web-api")
	env := map[string]string{}
	for _, line := range logs(evs, "web-api", Stdout) {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	want := map[string]string{
		"cwd":                          dir,
		"PWD":                          dir,
		"LEVERS9_JOB_ID":               "job_env",
		"LEVERS9_SERVICE":              "web-api",
		"LEVERS9_WEB_API_HOST":         "127.0.0.1",
		"LEVERS9_WEB_API_PORT_HTTP":    strconv.Itoa(webPorts[0].Port),
		"LEVERS9_WEB_API_PORT_ADMIN_X": "54321",
		"LEVERS9_MY_DB_HOST":           "127.0.0.1",
		"LEVERS9_MY_DB_PORT_PG":        strconv.Itoa(dbPort),
		"GREETING":                     "hello world=1",
		"PATH":                         os.Getenv("PATH") + ":/opt/extra",
		"HOME":                         os.Getenv("HOME"),
		"CUDA_VISIBLE_DEVICES":         "0,GPU-abc",
		"NVIDIA_VISIBLE_DEVICES":       "0,GPU-abc",
		helperVar:                      "env",
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
	if v, ok := env["LEVERS9_NODE_SECRET"]; ok {
		t.Errorf("the agent's LEVERS9_NODE_SECRET leaked: %q", v)
	}
	// The working directories are gone with the job.
	if _, err := os.Lstat(filepath.Join(p.cfg.Root, "job_env")); !os.IsNotExist(err) {
		t.Errorf("the job's working directory is left: %v", err)
	}
}

func TestSiblingsTalkOverHTTP(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	web := helperService(t, "web", "serve")
	web.Ports = []Port{{Name: "http"}}
	client := helperService(t, "client", "fetch", "web")
	c := start(t, p, JobSpec{ID: "job_http", Services: []ServiceSpec{web, client}})
	res, evs := c.wait(t)
	if res.Status != Complete || res.Reason != "" {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	if got := logs(evs, "client", Stdout); !slices.Equal(got, []string{`got "hello from web"`}) {
		t.Errorf("client printed %q\n%s", got, dump(evs))
	}
	for _, s := range res.Services {
		if s.State != Exited || s.ExitCode == nil || *s.ExitCode != 0 {
			t.Errorf("service %+v", s)
		}
	}
	// Everything the runtime reports is valid on the wire.
	for _, ev := range evs {
		var err error
		switch e := ev.(type) {
		case StateEvent:
			err = e.Wire().Validate()
		case LogEvent:
			err = wireLogs(e).Validate()
		}
		if err != nil {
			t.Errorf("%+v: %v", ev, err)
		}
	}
}

func TestStopKillsProcessGroup(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	c := start(t, p, JobSpec{ID: "job_stop", Services: []ServiceSpec{
		{Name: "tree", Command: []string{"sh", "-c", "sleep 100 & echo $!; sleep 100"}},
	}})
	line := c.waitFor(t, "the background pid", func(ev Event) bool { _, ok := ev.(LogEvent); return ok }).(LogEvent)
	grandchild, err := strconv.Atoi(line.Text)
	if err != nil {
		t.Fatalf("pid line %q", line.Text)
	}
	main := c.waitFor(t, "RUNNING", isState("tree", Running)).(StateEvent).PID
	c.job.Stop("cancelled", time.Minute)
	c.job.Stop("ignored second reason", time.Minute)
	res, evs := c.wait(t)
	if res.Status != Error || res.Reason != "cancelled" {
		t.Errorf("result %+v", res)
	}
	tree := serviceResult(t, res, "tree")
	if tree.State != Failed || tree.Reason != "stopped: cancelled" || tree.ExitCode == nil || *tree.ExitCode != 143 {
		t.Errorf("tree %+v (exit code %v)\n%s", tree, deref(tree.ExitCode), dump(evs))
	}
	gone(t, main)
	gone(t, grandchild)
}

func TestStopEscalatesToKill(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	// Ignoring SIGTERM is inherited by the background sleep.
	c := start(t, p, JobSpec{ID: "job_kill", Services: []ServiceSpec{
		{Name: "stubborn", Command: []string{"sh", "-c", `trap "" TERM; sleep 100 & echo $!; wait`}},
	}})
	line := c.waitFor(t, "the background pid", func(ev Event) bool { _, ok := ev.(LogEvent); return ok }).(LogEvent)
	grandchild, _ := strconv.Atoi(line.Text)
	c.job.Stop("cancelled", 100*time.Millisecond)
	res, _ := c.wait(t)
	s := serviceResult(t, res, "stubborn")
	if s.State != Failed || s.ExitCode == nil || *s.ExitCode != 137 || s.Reason != "stopped: cancelled" {
		t.Errorf("stubborn %+v (exit code %v)", s, deref(s.ExitCode))
	}
	gone(t, grandchild)
}

func TestMainExitKillsLeftovers(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	c := start(t, p, JobSpec{ID: "job_leftover", Services: []ServiceSpec{
		{Name: "quick", Command: []string{"sh", "-c", "sleep 100 & echo $!; echo done"}},
	}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	out := logs(evs, "quick", Stdout)
	if len(out) != 2 || out[1] != "done" {
		t.Fatalf("output %q", out)
	}
	pid, _ := strconv.Atoi(out[0])
	gone(t, pid)
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	// The timeout leaves "quick" (true) time to end, even on a busy machine.
	c := start(t, p, JobSpec{ID: "job_timeout", Timeout: 3 * time.Second, Services: []ServiceSpec{
		{Name: "slow", Command: []string{"sleep", "100"}},
		{Name: "quick", Command: []string{"true"}},
	}})
	res, evs := c.wait(t)
	if res.Status != Error || res.Reason != "timeout" {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	if s := serviceResult(t, res, "slow"); s.State != Failed || s.Reason != "stopped: timeout" {
		t.Errorf("slow %+v", s)
	}
	if s := serviceResult(t, res, "quick"); s.State != Exited {
		t.Errorf("quick %+v", s)
	}
}

func TestMissingCommand(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	c := start(t, p, JobSpec{ID: "job_nope", Services: []ServiceSpec{
		{Name: "other", Command: []string{"sleep", "100"}},
		{Name: "nope", Command: []string{"levers9-no-such-command"}},
		{Name: "later", Command: []string{"sleep", "100"}},
	}})
	res, evs := c.wait(t)
	const why = `exec: "levers9-no-such-command": executable file not found in $PATH`
	if res.Status != Error || res.Reason != "service nope failed: "+why {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	if s := serviceResult(t, res, "nope"); s.State != Failed || s.Reason != why || s.ExitCode != nil {
		t.Errorf("nope %+v", s)
	}
	for _, name := range []string{"other", "later"} {
		if s := serviceResult(t, res, name); s.State != Failed || s.Reason != "stopped: service nope failed" {
			t.Errorf("%s %+v", name, s)
		}
	}
	// "later" was never started.
	if st := states(evs, "later"); len(st) != 1 || st[0].State != Failed {
		t.Errorf("later states %+v", st)
	}
}

func TestFailingServiceStopsSiblings(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	c := start(t, p, JobSpec{ID: "job_fail", Services: []ServiceSpec{
		{Name: "long", Command: []string{"sleep", "100"}},
		{Name: "bad", Command: []string{"sh", "-c", "echo broken >&2; exit 3"}},
	}})
	res, evs := c.wait(t)
	if res.Status != Error || res.Reason != "service bad failed: exit status 3" {
		t.Fatalf("result %+v\n%s", res, dump(evs))
	}
	if s := serviceResult(t, res, "bad"); s.State != Failed || s.ExitCode == nil || *s.ExitCode != 3 {
		t.Errorf("bad %+v", s)
	}
	if s := serviceResult(t, res, "long"); s.State != Failed || s.Reason != "stopped: service bad failed" {
		t.Errorf("long %+v", s)
	}
	if got := logs(evs, "bad", Stderr); !slices.Equal(got, []string{"broken"}) {
		t.Errorf("bad stderr %q", got)
	}
	// Output comes before the final state.
	lastLine := slices.IndexFunc(evs, func(ev Event) bool { l, ok := ev.(LogEvent); return ok && l.Service == "bad" })
	final := slices.IndexFunc(evs, isState("bad", Failed))
	if lastLine < 0 || final < lastLine {
		t.Errorf("bad's final state came before its output\n%s", dump(evs))
	}
}

func TestLogSequenceUnderConcurrentOutput(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	const n = 2000
	c := start(t, p, JobSpec{ID: "job_spam", Services: []ServiceSpec{
		helperService(t, "one", "spam", strconv.Itoa(n)),
		helperService(t, "two", "spam", strconv.Itoa(n)),
	}})
	res, evs := c.wait(t)
	if res.Status != Complete {
		t.Fatalf("result %+v", res)
	}
	var seq uint64
	var last time.Time
	for _, ev := range evs {
		l, ok := ev.(LogEvent)
		if !ok {
			continue
		}
		seq++
		if l.Seq != seq {
			t.Fatalf("line %q has seq %d, want %d", l.Text, l.Seq, seq)
		}
		if l.Time.Before(last) {
			t.Fatalf("seq %d is older than its predecessor", l.Seq)
		}
		last = l.Time
	}
	if seq != 4*n {
		t.Fatalf("%d lines, want %d", seq, 4*n)
	}
	for _, svc := range []string{"one", "two"} {
		for stream, word := range map[Stream]string{Stdout: "out", Stderr: "err"} {
			lines := logs(evs, svc, stream)
			for i, l := range lines {
				if want := fmt.Sprintf("%s %s %d", svc, word, i); l != want {
					t.Fatalf("%s/%s line %d = %q, want %q", svc, stream, i, l, want)
				}
			}
		}
	}
}

func TestLongLinesSplit(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	const n = 150_000
	c := start(t, p, JobSpec{ID: "job_long", Services: []ServiceSpec{helperService(t, "long", "longline", strconv.Itoa(n))}})
	_, evs := c.wait(t)
	got := logs(evs, "long", Stdout)
	if len(got) != 4 || len(got[0]) != MaxLineBytes || len(got[1]) != MaxLineBytes || got[3] != "short" {
		t.Fatalf("%d lines", len(got))
	}
	if strings.Join(got[:3], "") != strings.Repeat("a", n) {
		t.Error("pieces do not add up to the line")
	}
	// The split is said, not silent.
	if notes, want := logs(evs, "long", System), SplitNote(Stdout, n, 3, MaxLineBytes); len(notes) != 1 || notes[0] != want {
		t.Errorf("system lines %q, want [%q]", notes, want)
	}
}

func TestStartRefusesDuplicateJob(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	spec := JobSpec{ID: "job_dup", Services: []ServiceSpec{{Name: "a", Command: []string{"sleep", "100"}}}}
	c := start(t, p, spec)
	if _, err := p.Start(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second start: %v", err)
	}
	c.job.Stop("done", 0)
	c.wait(t)
	// Once ended, the ID is free again.
	c2 := start(t, p, JobSpec{ID: "job_dup", Services: []ServiceSpec{{Name: "a", Command: []string{"true"}}}})
	if res, _ := c2.wait(t); res.Status != Complete {
		t.Fatalf("restart: %+v", res)
	}
	c.job.Stop("after the end", 0) // a no-op
	if res := c.job.Wait(); res.Reason != "done" {
		t.Errorf("reason changed to %q", res.Reason)
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	p := newProcess(t)
	ok := ServiceSpec{Name: "a", Command: []string{"true"}}
	tests := []struct {
		name string
		spec JobSpec
		want string
	}{
		{"no id", JobSpec{Services: []ServiceSpec{ok}}, "jobId"},
		{"id with slash", JobSpec{ID: "../x", Services: []ServiceSpec{ok}}, "jobId"},
		{"no services", JobSpec{ID: "j"}, "at least one service"},
		{"negative timeout", JobSpec{ID: "j", Timeout: -1, Services: []ServiceSpec{ok}}, "negative timeout"},
		{"dot name", JobSpec{ID: "j", Services: []ServiceSpec{{Name: "..", Command: []string{"true"}}}}, "service name"},
		{"duplicate", JobSpec{ID: "j", Services: []ServiceSpec{ok, ok}}, "duplicate service"},
		{"no command", JobSpec{ID: "j", Services: []ServiceSpec{{Name: "a", Image: "alpine"}}}, "needs a command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Start(context.Background(), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Start(ctx, JobSpec{ID: "j", Services: []ServiceSpec{ok}}); err == nil {
		t.Error("started with a cancelled context")
	}
	if _, err := NewProcess(ProcessConfig{}); err == nil {
		t.Error("a runtime without a root")
	}
}

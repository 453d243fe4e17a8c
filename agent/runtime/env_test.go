package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEnvKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"web": "WEB", "my-db": "MY_DB", "admin_x": "ADMIN_X", "a-b-2": "A_B_2"} {
		if got := EnvKey(in); got != want {
			t.Errorf("EnvKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServiceEnvPrecedence(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/bin", "PWD=/agent", "LEVERS9_TOKEN=secret", "CUDA_VISIBLE_DEVICES=0,1,2,3", "HOME=/root"}
	s := ServiceSpec{Name: "a", Env: []EnvVar{{Name: "HOME", Value: "/home/a"}, {Name: "CUDA_VISIBLE_DEVICES", Value: "all"}}}
	got := serviceEnv(base, "job_1", s, "/w/job_1/a", []string{"LEVERS9_A_HOST=127.0.0.1"}, nil)
	want := []string{
		"PATH=/bin", "PWD=/w/job_1/a", "CUDA_VISIBLE_DEVICES=", "HOME=/home/a", "NVIDIA_VISIBLE_DEVICES=void",
		"LEVERS9_JOB_ID=job_1", "LEVERS9_SERVICE=a", "LEVERS9_A_HOST=127.0.0.1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestValidateSharesTheWireRules: the runtimes check a job by the wire's
// one definition, address variables included.
func TestValidateSharesTheWireRules(t *testing.T) {
	t.Parallel()
	ambiguous := JobSpec{ID: "j", Attempt: 1, Services: []ServiceSpec{
		{Name: "a-port", Command: []string{"true"}, Ports: []Port{{Name: "x"}}},
		{Name: "a", Command: []string{"true"}, Ports: []Port{{Name: "port_x"}}},
	}}
	if err := Validate(ambiguous); err == nil || !strings.Contains(err.Error(), "LEVERS9_A_PORT_PORT_X") {
		t.Errorf("ambiguous names: %v", err)
	}
	ambiguous.Services[1].Ports[0].Name = "y"
	if err := Validate(ambiguous); err != nil {
		t.Errorf("distinct names: %v", err)
	}
	for name, bad := range map[string]JobSpec{
		"upper-case service": {ID: "j", Attempt: 1, Services: []ServiceSpec{{Name: "Web", Command: []string{"true"}}}},
		"reserved variable":  {ID: "j", Attempt: 1, Services: []ServiceSpec{{Name: "a", Command: []string{"true"}, Env: []EnvVar{{Name: "LEVERS9_X", Value: "1"}}}}},
		"port twice":         {ID: "j", Attempt: 1, Services: []ServiceSpec{{Name: "a", Command: []string{"true"}, Ports: []Port{{Name: "p", Port: 80}}}, {Name: "b", Command: []string{"true"}, Ports: []Port{{Name: "q", Port: 80}}}}},
		"relative mount dir": {ID: "j", Attempt: 1, Services: []ServiceSpec{{Name: "a", Command: []string{"true"}}}, Mounts: []Mount{{Path: "/data", Dir: "rel"}}},
		"negative attempt":   {ID: "j", Attempt: -1, Services: []ServiceSpec{{Name: "a", Command: []string{"true"}}}},
	} {
		if err := Validate(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A job user's PATH keeps only folders others may search.
func TestSearchablePath(t *testing.T) {
	t.Parallel()
	private := t.TempDir() // 0700
	open := filepath.Join(private, "bin")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	got := searchablePath(strings.Join([]string{"/usr/bin", private, open, "relative", "/no/such/dir", "/bin"}, ":"))
	if got != "/usr/bin:/bin" {
		t.Fatalf("searchablePath = %q", got)
	}
}

// The cache of searchablePath answers for the PATH it is asked about.
func TestPathCacheFollowsPath(t *testing.T) {
	t.Parallel()
	var c pathCache
	private := t.TempDir() // 0700
	for _, path := range []string{"/usr/bin:" + private, "/bin:" + private + ":/usr/bin", "/usr/bin:" + private} {
		if got, want := c.of(path), searchablePath(path); got != want {
			t.Errorf("of(%q) = %q, want %q", path, got, want)
		}
	}
}

package wire

import (
	"strings"
	"testing"
)

// A virtual environment's pip runs as the agent outside any container:
// names with versions only, never an option, path, URL or variable.
func TestCheckVenvRequirements(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("a", 64)
	hash := "--hash=sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name     string
		packages []string
		reqs     string
		ok       bool
	}{
		{"names", []string{"six", "torch==2.5.1", "pillow[avif]>=10,<12", `tomli; python_version < "3.11"`}, "", true},
		{"requirements", nil, "# pinned\nsix==1.16.0 " + hash + " \\\n    " + hash + "\n\nrequests  # http\n", true},
		{"package option", []string{"--index-url=http://x"}, "", false},
		{"package option later", []string{"six --no-binary=:all:"}, "", false},
		{"package path", []string{"/tmp/evil"}, "", false},
		{"package relative path", []string{"./evil"}, "", false},
		{"package dot", []string{"."}, "", false},
		{"package url", []string{"https://example.com/x.whl"}, "", false},
		{"package direct reference", []string{"evil @ file:///tmp/evil"}, "", false},
		{"index url", nil, "--index-url http://169.254.169.254/\nsix\n", false},
		{"extra index after continuation", nil, "six \\\n--extra-index-url http://x\n", false},
		{"editable", nil, "-e git+https://example.com/evil#egg=evil\n", false},
		{"nested file", nil, "-r /etc/passwd\n", false},
		{"constraints", nil, "-c /etc/shadow\n", false},
		{"no binary", nil, "six --no-binary :all:\n", false},
		{"variable", nil, "${AWS_SECRET_ACCESS_KEY}\n", false},
		{"find links", nil, "  -f /tmp\n", false},
		{"carriage return", nil, "six\rsix\n", false},
	} {
		v := &Venv{Key: key, Steps: []BuildStep{{Kind: StepPip, Packages: tc.packages, Requirements: tc.reqs}}}
		if err := CheckVenv(v); (err == nil) != tc.ok {
			t.Errorf("%s: CheckVenv = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

package secrets

import (
	"maps"
	"strings"
	"testing"
)

// The form's KEY=VALUE lines: blank lines and comments skipped, values
// kept as typed ('=' included, empty allowed), problems naming lines and
// keys but never values.
func TestParseValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       map[string]string
		problems   []string // substrings, one per problem
	}{
		{"two", "A=1\nB=x=y\n", map[string]string{"A": "1", "B": "x=y"}, nil},
		{"crlf, blanks, comments, empty value", "# hf\r\n\r\nHF_TOKEN=tok\r\n  EMPTY =\r\n", map[string]string{"HF_TOKEN": "tok", "EMPTY": ""}, nil},
		{"nothing", "\n# only a comment\n", map[string]string{}, []string{"at least one"}},
		{"not an assignment", "A=1\nsecret-value-without-key\n", map[string]string{"A": "1"}, []string{"line 2 is not KEY=VALUE"}},
		{"bad key", "lower=v1\nLEVERS9_X=v2", map[string]string{}, []string{"line 1", "line 2"}},
		{"twice", "A=1\nA=2", map[string]string{"A": "1"}, []string{"line 2: A is set twice"}},
		{"NUL", "A=a\x00b", map[string]string{}, []string{"line 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems := parseValues(tc.text)
			if !maps.Equal(got, tc.want) {
				t.Errorf("values %v; want %v", got, tc.want)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %q; want %d", problems, len(tc.problems))
			}
			for i, p := range problems {
				if !strings.Contains(p, tc.problems[i]) {
					t.Errorf("problem %q; want it to say %q", p, tc.problems[i])
				}
				for _, v := range []string{"secret-value-without-key", "v1", "v2", "tok"} {
					if strings.Contains(p, v) {
						t.Errorf("problem %q quotes a value", p)
					}
				}
			}
		})
	}
}

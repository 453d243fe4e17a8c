package jobs_test

import (
	"regexp"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/tenancy"
)

// A job submitted without a name gets a readable one at submission, in
// its row and its stored spec alike; a named job keeps its name. Cancelling
// says who did it by email, not by user ID.
func TestSubmitNamesUnnamedJobsAndCancelSaysWho(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		s := w.service(w.schedule)
		tests := []struct {
			name, given string
			want        *regexp.Regexp
		}{
			{name: "unnamed", given: "", want: regexp.MustCompile(`^[a-z]+-[a-z]+-[0-9]{3}$`)},
			{name: "named", given: "train-7b", want: regexp.MustCompile(`^train-7b$`)},
		}
		for _, tt := range tests {
			spec := jobspec.Job{Name: tt.given, Queue: tenancy.DefaultQueue,
				Services: []jobspec.Service{{Name: "main", Image: "busybox", Command: []string{"true"}, CPU: 0.1, MemoryMiB: 64}}}
			j, err := s.Submit(w.admin, spec)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if !tt.want.MatchString(j.Name) || j.Spec.Name != j.Name {
				t.Errorf("%s: job name %q, spec name %q; want %v in both", tt.name, j.Name, j.Spec.Name, tt.want)
			}
			c, err := s.Cancel(w.admin, j.ID)
			if err != nil {
				t.Fatalf("%s: cancel: %v", tt.name, err)
			}
			if want := "cancelled by admin@acme.test"; c.StatusReason != want {
				t.Errorf("%s: reason %q; want %q", tt.name, c.StatusReason, want)
			}
		}
	})
}

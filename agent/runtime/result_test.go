package runtime

import "testing"

func TestSummarize(t *testing.T) {
	t.Parallel()
	zero, three := 0, 3
	ok := func(n string) ServiceResult { return ServiceResult{Name: n, State: Exited, ExitCode: &zero} }
	tests := []struct {
		name     string
		cause    string
		services []ServiceResult
		status   Status
		reason   string
	}{
		{"all exited", "", []ServiceResult{ok("a"), ok("b")}, Complete, ""},
		{"stopped although all exited", "cancelled", []ServiceResult{ok("a")}, Error, "cancelled"},
		{"cause wins", "timeout", []ServiceResult{ok("a"), {Name: "b", State: Failed, Reason: "stopped: timeout"}}, Error, "timeout"},
		{"first failure named", "", []ServiceResult{ok("a"), {Name: "b", State: Failed, ExitCode: &three, Reason: "exit status 3"}, {Name: "c", State: Failed}}, Error, "service b failed: exit status 3"},
		{"failure without reason", "", []ServiceResult{{Name: "b", State: Failed}}, Error, "service b failed"},
		{"unfinished", "", []ServiceResult{{Name: "b", State: Running}}, Error, "service b did not finish"},
	}
	for _, tt := range tests {
		r := Summarize(tt.cause, tt.services)
		if r.Status != tt.status || r.Reason != tt.reason || len(r.Services) != len(tt.services) {
			t.Errorf("%s: got %s %q, want %s %q", tt.name, r.Status, r.Reason, tt.status, tt.reason)
		}
	}
}

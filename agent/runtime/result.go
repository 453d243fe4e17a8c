package runtime

import "fmt"

// Status is how a job ended.
type Status string

// Job results.
const (
	Complete Status = "COMPLETE" // every service exited 0
	Error    Status = "ERROR"
)

// Result is how a job ended and how each service did.
type Result struct {
	Status   Status
	Reason   string          // why it is ERROR: the stop reason or the first failure
	Services []ServiceResult // in spec order
}

// ServiceResult is how one service ended.
type ServiceResult struct {
	Name     string
	State    State
	ExitCode *int
	Reason   string
}

// Summarize decides a job's result: COMPLETE when nothing stopped it (cause
// is empty) and every service exited 0, ERROR otherwise. cause is the first
// stop reason or failure; without one the first unsuccessful service is
// named. Runtimes share it so every runtime reports jobs alike.
func Summarize(cause string, services []ServiceResult) Result {
	r := Result{Status: Complete, Services: services}
	for _, s := range services {
		if s.State == Exited {
			continue
		}
		r.Status = Error
		if cause == "" {
			cause = failure(s.Name, s.Reason)
			if s.State != Failed {
				cause = fmt.Sprintf("service %s did not finish", s.Name)
			}
		}
	}
	if cause != "" {
		r.Status, r.Reason = Error, cause
	}
	return r
}

// failure is the job reason when service name failed because of reason.
func failure(name, reason string) string {
	if reason == "" {
		return fmt.Sprintf("service %s failed", name)
	}
	return fmt.Sprintf("service %s failed: %s", name, reason)
}

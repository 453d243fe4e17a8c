package queues

import "github.com/levers9/levers9/internal/fault"

// MaxIdleTimeoutSeconds is the longest idle timeout a queue takes, 30
// days: the schema's range for idle_timeout_seconds (the schema cannot
// import this package), checked here first for a message that says so.
const MaxIdleTimeoutSeconds = 30 * 24 * 3600

// checkIdleTimeout refuses an idle timeout (seconds; nil when unchanged)
// outside 0 (never stop) to 30 days.
func checkIdleTimeout(seconds *int) error {
	if seconds == nil || (*seconds >= 0 && *seconds <= MaxIdleTimeoutSeconds) {
		return nil
	}
	return fault.Invalid("idleTimeoutSeconds", "must be from 0 (never) to 30 days")
}

package jobs

import (
	"fmt"
	"time"
)

// Reasons jobs end with; tests and the dashboard rely on their texts.
const (
	// ReasonNodeLost: the job's node was lost and it had no retry left.
	ReasonNodeLost = "node lost"
	// ReasonLostOnRestart: the agent came back without a job it ran.
	ReasonLostOnRestart = "lost on node restart"
)

// ReasonIdle is the reason of a job its queue's idle timeout stopped after
// idle without activity: "idle for 30m".
func ReasonIdle(idle time.Duration) string {
	switch {
	case idle > 0 && idle%time.Hour == 0:
		return fmt.Sprintf("idle for %dh", idle/time.Hour)
	case idle > 0 && idle%time.Minute == 0:
		return fmt.Sprintf("idle for %dm", idle/time.Minute)
	}
	return "idle for " + idle.String()
}

// clip cuts a reason to the n bytes a status reason holds.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

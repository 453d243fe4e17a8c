package functions

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxCronLength bounds a cron expression.
const MaxCronLength = 200

// ParseCron parses a standard five-field cron expression ("*/15 * * * *")
// or a descriptor ("@hourly", "@every 10m"); times are UTC.
func ParseCron(expr string) (cron.Schedule, error) {
	if len(expr) > MaxCronLength {
		return nil, fmt.Errorf("a cron expression has at most %d characters", MaxCronLength)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("cron expressions are always UTC: drop %q", strings.Fields(expr)[0])
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", clip(expr), err)
	}
	return s, nil
}

// NextRuns are the next n ticks of expr strictly after t, in UTC; none
// when expr does not parse.
func NextRuns(expr string, t time.Time, n int) []time.Time {
	s, err := ParseCron(expr)
	if err != nil {
		return nil
	}
	var out []time.Time
	t = t.UTC()
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

package components

import (
	"fmt"
	"time"
)

// When formats a moment for tables: UTC (saying so: readers elsewhere
// would take it for their own time), to the second, or "—".
func When(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// Took is the time from start to end (or to now while running), or "—"
// before the start.
func Took(start, end *time.Time, now time.Time) string {
	if start == nil {
		return "—"
	}
	stop := now
	if end != nil {
		stop = *end
	}
	d := stop.Sub(*start).Round(time.Second)
	if d < 0 {
		d = 0
	}
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	}
	if m > 0 {
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// Bytes is a size for people.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// StatusClass is the class of a status chip (status status-RUNNING): the
// page's chip and the live patches that change it agree through it.
func StatusClass(s string) string { return "status status-" + s }

package workers

import (
	"testing"
	"time"
)

// Cron passes run on the first whole minute after the last, where every
// cron tick falls due: never later than a tick, never twice in a minute.
func TestWholeMinutes(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct{ now, want string }{
		{"2026-12-02T12:00:00Z", "2026-12-02T12:01:00Z"},
		{"2026-12-02T12:00:00.001Z", "2026-12-02T12:01:00Z"},
		{"2026-12-02T12:00:59.999999999Z", "2026-12-02T12:01:00Z"},
		{"2026-12-02T23:59:30Z", "2026-12-03T00:00:00Z"},
		{"2026-12-02T12:00:30+05:30", "2026-12-02T12:01:00+05:30"},
		{"2026-12-02T12:00:30+05:45", "2026-12-02T12:01:00+05:45"},
	} {
		if got := (wholeMinutes{}).Next(at(c.now)); !got.Equal(at(c.want)) {
			t.Errorf("Next(%s) = %s, want %s", c.now, got, c.want)
		}
	}
}

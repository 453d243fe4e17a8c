package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/levers9/levers9/internal/wire"
)

// DefaultLogQuota is the default per-job log quota: generous enough for any
// sane job, small enough that one runaway job cannot fill the database.
const DefaultLogQuota = 1 << 30

// ParseSize parses a size in bytes such as "1GiB", "100MB", "512KiB" or a
// bare number of bytes.
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		bytes  float64
	}{
		{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
		{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"KB", 1e3}, {"B", 1},
	}
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.bytes
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1<<62 || v != v {
		return 0, fmt.Errorf("%q: want a size such as 1GiB, 100MB or 0", s)
	}
	return int64(v * mult), nil
}

func lines(n int64) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

// formatSize is n bytes for people.
func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// logQuota enforces the per-job log quota on one attempt's lines, in seq
// order. Lines over it are left out, and the log says so exactly: the first
// line left out is replaced by a system line saying the quota was reached,
// and the last one of each stretch by a system line naming the stretch
// ("lines 200001–935000 of web dropped"), written before the service's end
// is reported so that a follower sees it.
type logQuota struct {
	limit int64 // bytes, counting a newline per line; 0: none
	used  int64
	// The stretch of dropped lines not yet reported: from, to (seqs) and
	// per service how many lines and bytes, in order of appearance.
	from, to uint64
	last     wire.LogLine // the last line dropped
	counts   []droppedCount
	noticeAt uint64 // the seq of the quota's notice (the first line dropped)
}

type droppedCount struct {
	service      string
	lines, bytes int64
}

// take returns what to send for line l: l itself, a system line in its
// place, or nothing.
func (q *logQuota) take(l wire.LogLine) (wire.LogLine, bool) {
	size := int64(len(l.Text)) + 1
	if q.limit <= 0 || (q.noticeAt == 0 && q.used+size <= q.limit) {
		q.used += size
		return l, true
	}
	if q.from == 0 {
		q.from = l.Seq
	}
	q.to, q.last = l.Seq, l
	q.count(l.Service, size)
	if q.noticeAt == 0 {
		q.noticeAt = l.Seq
		return q.system(l, fmt.Sprintf("levers9: per-job log quota %s reached at line %d of %s: this line and the job's later lines are dropped",
			formatSize(q.limit), l.Seq, l.Service)), true
	}
	return wire.LogLine{}, false
}

func (q *logQuota) count(service string, size int64) {
	for i := range q.counts {
		if q.counts[i].service == service {
			q.counts[i].lines++
			q.counts[i].bytes += size
			return
		}
	}
	q.counts = append(q.counts, droppedCount{service: service, lines: 1, bytes: size})
}

// report returns the system line naming the dropped stretch, in place of
// its last line, when there is one to name; the stretch is then reported.
// A stretch of the one line the quota's notice replaced needs no more.
func (q *logQuota) report() (wire.LogLine, bool) {
	if q.from == 0 {
		return wire.LogLine{}, false
	}
	from, to, counts, last := q.from, q.to, q.counts, q.last
	q.from, q.to, q.counts = 0, 0, nil
	if to == q.noticeAt {
		return wire.LogLine{}, false // the notice's seq cannot carry a second line
	}
	var what string
	if len(counts) == 1 {
		what = fmt.Sprintf("lines %d–%d of %s dropped (%s, %s)", from, to, counts[0].service, lines(counts[0].lines), formatSize(counts[0].bytes))
	} else {
		parts := make([]string, len(counts))
		for i, c := range counts {
			parts[i] = fmt.Sprintf("%s: %s, %s", c.service, lines(c.lines), formatSize(c.bytes))
		}
		what = fmt.Sprintf("lines %d–%d dropped (%s)", from, to, strings.Join(parts, "; "))
	}
	return q.system(last, fmt.Sprintf("levers9: %s: per-job log quota %s reached", what, formatSize(q.limit))), true
}

func (q *logQuota) system(l wire.LogLine, text string) wire.LogLine {
	return wire.LogLine{Service: l.Service, Stream: wire.System, Seq: l.Seq, Time: l.Time, Text: text}
}

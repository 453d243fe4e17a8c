package agent

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// The quota keeps lines while their bytes (a newline each) fit, replaces
// the first one over it by a notice and the last one of each stretch by a
// note naming the stretch exactly, when a service ends or the job does.
func TestLogQuota(t *testing.T) {
	t.Parallel()
	type step struct {
		service, text string // a line; "" service: a report (a service's end)
	}
	tests := []struct {
		name  string
		limit int64
		steps []step
		want  []string // seq stream service text
	}{
		{"no quota", 0, []step{{"a", "12345"}, {"a", "x"}, {}}, []string{"1 stdout a 12345", "2 stdout a x"}},
		{"within", 8, []step{{"a", "123"}, {"a", "123"}, {}}, []string{"1 stdout a 123", "2 stdout a 123"}},
		{"one over, at the end", 7, []step{{"a", "123"}, {"a", "12"}, {"a", "1"}, {}}, []string{
			"1 stdout a 123", "2 stdout a 12",
			"3 system a levers9: per-job log quota 7 bytes reached at line 3 of a: this line and the job's later lines are dropped",
		}},
		{"a stretch", 4, []step{{"a", "123"}, {"a", "1"}, {"a", "22"}, {"a", "333"}, {}}, []string{
			"1 stdout a 123",
			"2 system a levers9: per-job log quota 4 bytes reached at line 2 of a: this line and the job's later lines are dropped",
			"4 system a levers9: lines 2–4 of a dropped (3 lines, 9 bytes): per-job log quota 4 bytes reached",
		}},
		{"stretches of two services", 2, []step{{"a", "1"}, {"b", "x"}, {"a", "2"}, {"b", "yy"}, {}, {"a", "3"}, {"a", "4"}, {}}, []string{
			"1 stdout a 1",
			"2 system b levers9: per-job log quota 2 bytes reached at line 2 of b: this line and the job's later lines are dropped",
			"4 system b levers9: lines 2–4 dropped (b: 2 lines, 5 bytes; a: 1 line, 2 bytes): per-job log quota 2 bytes reached",
			"6 system a levers9: lines 5–6 of a dropped (2 lines, 4 bytes): per-job log quota 2 bytes reached",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := &logQuota{limit: tt.limit}
			var got []string
			add := func(l wire.LogLine, ok bool) {
				if ok {
					got = append(got, fmt.Sprintf("%d %s %s %s", l.Seq, l.Stream, l.Service, l.Text))
				}
			}
			seq := uint64(0)
			for _, s := range tt.steps {
				if s.service == "" {
					add(q.report())
					continue
				}
				seq++
				add(q.take(wire.LogLine{Service: s.service, Stream: wire.Stdout, Seq: seq, Time: time.Unix(0, 0), Text: s.text}))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1GiB", 1 << 30, true}, {"100MB", 100e6, true}, {"512 KiB", 512 << 10, true},
		{"1.5MiB", 3 << 19, true}, {"42", 42, true}, {"-1", 0, false}, {"NaN", 0, false}, {"1e30GiB", 0, false}, {"lots", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

package dbstate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Tenants choose queue names and GPU types: past the cap, the smallest
// fold into "other" (the totals stay), and no value, however odd, fails a
// scrape.
func TestSeriesAreBoundedAndClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		add  func(s *series)
		most int
		want []string // label values joined by "/" = value, in order
	}{
		{"under the cap", func(s *series) {
			s.add(2, "gpu", "PENDING")
			s.add(1, "cpu", "RUNNING")
			s.add(1, "gpu", "PENDING")
		}, 2, []string{"gpu/PENDING=3", "cpu/RUNNING=1"}},
		{"over the cap", func(s *series) {
			s.add(5, "big", "PENDING")
			s.add(1, "small-1", "PENDING")
			s.add(4, "mid", "RUNNING")
			s.add(1, "small-2", "PENDING")
			s.add(1, "small-2", "RUNNING")
		}, 2, []string{"big/PENDING=5", "other/PENDING=2", "mid/RUNNING=4", "other/RUNNING=1"}},
		{"one queue per request cannot explode", func(s *series) {
			for i := range 1000 {
				s.add(1, "q"+strings.Repeat("x", i%300), "PENDING")
			}
		}, maxQueues, nil},
		{"invalid UTF-8 and long values", func(s *series) {
			s.add(1, "A100\xff\xfe", "x")
			s.add(1, strings.Repeat("é", 100), "x")
		}, 10, []string{"A100/x=1", strings.Repeat("é", maxLabelBytes/2) + "/x=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSeries()
			tc.add(s)
			d := prometheus.NewDesc("levers9_test", "test", []string{"queue", "state"}, nil)
			ch := make(chan prometheus.Metric, 2000)
			s.capped(tc.most).emit(ch, d)
			close(ch)
			var got []string
			firsts := map[string]bool{}
			for m := range ch {
				var pb dto.Metric
				if err := m.Write(&pb); err != nil {
					t.Fatal(err)
				}
				var vals []string
				for _, l := range pb.GetLabel() {
					vals = append(vals, l.GetValue())
				}
				firsts[vals[0]] = true
				got = append(got, fmt.Sprintf("%s=%g", strings.Join(vals, "/"), pb.GetGauge().GetValue()))
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("series %v, want %v", got, tc.want)
			}
			if len(firsts) > tc.most+1 {
				t.Errorf("%d distinct values, want at most %d and other", len(firsts), tc.most)
			}
		})
	}
}

package dbstate

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// series sums values by label values, the first of which (a queue name, a
// GPU type) tenants choose and is therefore capped.
type series struct {
	sums  map[string]float64 // by label values joined with \xff
	order []string
}

func newSeries() *series { return &series{sums: map[string]float64{}} }

const (
	sep           = "\xff"
	maxLabelBytes = 64
)

// add adds v to the series of labels. Values are made valid UTF-8 (an
// agent's GPU type is any string; an invalid one would fail the scrape)
// and clipped, which also keeps sep, itself invalid UTF-8, out of them.
func (s *series) add(v float64, labels ...string) {
	clean := make([]string, len(labels))
	for i, l := range labels {
		l = strings.ToValidUTF8(l, "")
		if len(l) > maxLabelBytes {
			l = strings.ToValidUTF8(l[:maxLabelBytes], "")
		}
		clean[i] = l
	}
	k := strings.Join(clean, sep)
	if _, ok := s.sums[k]; !ok {
		s.order = append(s.order, k)
	}
	s.sums[k] += v
}

// capped is s with all but the most distinct first labels values (by their
// total) folded into "other".
func (s *series) capped(most int) *series {
	totals := map[string]float64{}
	for k, v := range s.sums {
		first, _, _ := strings.Cut(k, sep)
		totals[first] += v
	}
	if len(totals) <= most {
		return s
	}
	names := make([]string, 0, len(totals))
	for n := range totals {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(totals[b], totals[a]), strings.Compare(a, b))
	})
	keep := map[string]bool{}
	for _, n := range names[:most] {
		keep[n] = true
	}
	out := newSeries()
	for _, k := range s.order {
		labels := strings.Split(k, sep)
		if !keep[labels[0]] {
			labels[0] = other
		}
		out.add(s.sums[k], labels...)
	}
	return out
}

// emit sends one gauge per label combination, in the order first added.
func (s *series) emit(ch chan<- prometheus.Metric, d *prometheus.Desc) {
	for _, k := range s.order {
		if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, s.sums[k], strings.Split(k, sep)...); err == nil {
			ch <- m
		}
	}
}

package nodes

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/timewindow"
	"github.com/levers9/levers9/ui/charts"
)

// ChartHours is how many hours the GPU charts go back.
const ChartHours = 24

// MaxGPUCharts bounds the charts of one page (one per node and GPU type);
// the busiest are shown.
const MaxGPUCharts = 12

// gpuCharts draws the GPUs booked and free per hour of the last ChartHours
// on each node of ns and GPU type, busiest first: one query
// (nodesvc.GPUHistory). The second result says how many were left out.
func (h *handlers) gpuCharts(ctx context.Context, ns []*ent.Node) ([]charts.Bars, int, error) {
	w := timewindow.LastHours(h.svc.Now(), ChartHours)
	uses, err := h.svc.GPUHistory(ctx, ns, w)
	if err != nil {
		return nil, 0, err
	}
	names := make(map[string]string, len(ns))
	for _, n := range ns {
		names[n.ID] = n.Name
	}
	var labels []string
	for _, s := range w.Starts() {
		labels = append(labels, s.UTC().Format("15h"))
	}
	type drawn struct {
		chart  charts.Bars
		booked float64
	}
	var all []drawn
	for _, u := range uses {
		b := charts.Bars{
			ID:    "gpus-" + u.NodeID + "-" + idPart(u.Type),
			Title: names[u.NodeID] + " · " + strconv.Itoa(u.Count) + " × " + u.Type, Unit: "GPU-hours",
			Categories: labels,
			Note:       "Per hour (UTC), the last " + strconv.Itoa(ChartHours) + " hours; free counts the GPUs the node has now.",
		}
		// Booked is an average per hour; times the part of the hour gone
		// by (all but the current one: all of it) it is GPU-hours.
		bs := charts.Series{Name: "booked", Values: make([]float64, len(u.Booked))}
		fs := charts.Series{Name: "free", Values: make([]float64, len(u.Booked))}
		sum := 0.0
		for i, v := range u.Booked {
			part := w.Elapsed(i)
			bs.Values[i] = v * part
			fs.Values[i] = max(float64(u.Count)-v, 0) * part
			sum += bs.Values[i]
		}
		b.Series = []charts.Series{bs, fs}
		all = append(all, drawn{b, sum})
	}
	// Busiest first, keeping the nodes' order among equals.
	slices.SortStableFunc(all, func(a, b drawn) int { return cmp.Compare(b.booked, a.booked) })
	var out []charts.Bars
	for _, d := range all[:min(len(all), MaxGPUCharts)] {
		out = append(out, d.chart)
	}
	return out, len(all) - len(out), nil
}

// idPart is s as a part of an element ID: letters and digits, anything
// else a dash (GPU types are free text: "RTX 4090").
func idPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, s)
}

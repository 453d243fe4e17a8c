package queues

import (
	"context"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/timewindow"
	"github.com/levers9/levers9/ui/charts"
)

// DepthHours is how many hours the queue depth chart goes back.
const DepthHours = 24

// maxDepthSeries is how many queues the chart names; the rest are summed
// as "others".
const maxDepthSeries = 7

// depthChart draws the jobs waiting per queue in each of the last
// DepthHours (queues.Depths: one query, as the viewer); qs names them.
func (h *handlers) depthChart(ctx context.Context, qs []*ent.Queue) (charts.Bars, error) {
	w := timewindow.LastHours(time.Now(), DepthHours)
	b := charts.Bars{ID: "queue-depth", Title: "Jobs waiting per hour", Unit: "job-hours waiting",
		Note: "Each bar is the jobs waiting in that hour (UTC) on average, times the part of it gone by, the last " +
			strconv.Itoa(DepthHours) + " hours, from the jobs' submission and start times."}
	for _, s := range w.Starts() {
		b.Categories = append(b.Categories, s.UTC().Format("15h"))
	}
	ds, err := h.rt.Deps.Queues.Depths(ctx, w)
	if err != nil {
		return b, err
	}
	names := make(map[string]string, len(qs))
	for _, q := range qs {
		names[q.ID] = q.Name
	}
	for i, d := range ds {
		name := names[d.QueueID]
		if name == "" {
			name = d.QueueID
		}
		vs := make([]float64, len(d.Waiting))
		for k, v := range d.Waiting {
			vs[k] = v * w.Elapsed(k)
		}
		if i >= maxDepthSeries && len(ds) > maxDepthSeries+1 {
			if i == maxDepthSeries {
				b.Series = append(b.Series, charts.Series{Name: "others", Values: make([]float64, len(vs))})
			}
			for k, v := range vs {
				b.Series[maxDepthSeries].Values[k] += v
			}
			continue
		}
		b.Series = append(b.Series, charts.Series{Name: name, Values: vs})
	}
	return b, nil
}

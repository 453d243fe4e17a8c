package jobs

import (
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/ui/charts"
)

// timelineChart is job j's timeline (its services loaded) as a chart.
func timelineChart(j *ent.Job, now time.Time) charts.Timeline {
	tl := jobs.TimelineOf(j, j.Edges.Services, now)
	c := charts.Timeline{ID: "job-timeline", Title: "Timeline of " + orDash(j.Name), Start: tl.Start, End: tl.End}
	for _, p := range jobs.Phases {
		c.Phases = append(c.Phases, string(p))
	}
	for _, s := range tl.Services {
		row := charts.TimelineRow{Label: s.Service}
		for _, sp := range s.Spans {
			row.Spans = append(row.Spans, charts.Span{Phase: string(sp.Phase), From: sp.From, To: sp.To, Open: sp.Open})
		}
		c.Rows = append(c.Rows, row)
	}
	if !jobs.Ended(j.Status) {
		c.Note = "So far: the job goes on."
	}
	return c
}

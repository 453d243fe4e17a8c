package charts

import (
	"fmt"
	"time"

	"github.com/levers9/levers9/ui/components"
)

// Timeline is a Gantt chart: rows (a job's services) of phases on one time
// axis, from Start to End.
type Timeline struct {
	ID, Title  string
	Start, End time.Time
	Rows       []TimelineRow
	// Phases name the kinds of span in legend order ("queued", "running");
	// a span's Phase is one of them and takes its colour.
	Phases []string
	// Duration writes a span's length; nil takes the dashboard's
	// (components.Took).
	Duration func(time.Duration) string
	// Note is said under the chart.
	Note string
}

// TimelineRow is one row of spans.
type TimelineRow struct {
	Label string
	Spans []Span
}

// Span is one phase of a row; Open spans go on (to End, "so far").
type Span struct {
	Phase    string
	From, To time.Time
	Open     bool
}

// timelineLayout is a Timeline with coordinates.
type timelineLayout struct {
	Timeline
	Empty  bool
	Height int
	Rows   []timelineRow
	Legend []legendItem
	// StartLabel and EndLabel are the axis ends: the times and the length
	// between them.
	StartLabel, EndLabel, Length string
}

type timelineRow struct {
	Label, LabelY string
	Spans         []spanShape
}

type spanShape struct {
	X, Y, W, H, Fill string
	Phase, Length    string
	Title            string
}

// rowHeight is the drawing's units per row; timelinePadLeft leaves room
// for the row labels.
const (
	rowHeight       = 28
	timelinePadLeft = 120
)

func (t Timeline) duration(d time.Duration) string {
	if t.Duration != nil {
		return t.Duration(d)
	}
	start := time.Time{}
	end := start.Add(d)
	return components.Took(&start, &end, end)
}

func (t Timeline) layout() timelineLayout {
	l := timelineLayout{Timeline: t, Height: padTop + padBottom + rowHeight*max(len(t.Rows), 1)}
	colour := map[string]string{}
	for i, p := range t.Phases {
		colour[p] = Colour(i)
		l.Legend = append(l.Legend, legendItem{Name: p, Fill: Colour(i)})
	}
	total := t.End.Sub(t.Start)
	l.StartLabel = t.Start.UTC().Format("15:04:05 MST")
	l.EndLabel = t.End.UTC().Format("15:04:05 MST")
	l.Length = t.duration(max(total, 0))
	l.Empty = len(t.Rows) == 0 || total <= 0
	if total <= 0 {
		total = time.Second // one scale however short: nothing divides by zero
	}
	plotW := float64(Width - timelinePadLeft - padRight)
	x := func(at time.Time) float64 {
		f := float64(at.Sub(t.Start)) / float64(total)
		return timelinePadLeft + plotW*min(max(f, 0), 1)
	}
	for i, r := range t.Rows {
		y := float64(padTop + rowHeight*i)
		row := timelineRow{Label: r.Label, LabelY: coord(y + rowHeight/2 + 4)}
		for _, s := range r.Spans {
			to := s.To
			if s.Open {
				to = t.End
			}
			x0, x1 := x(s.From), x(to)
			length := t.duration(max(to.Sub(s.From), 0))
			if s.Open {
				length += " so far"
			}
			fill, ok := colour[s.Phase]
			if !ok {
				fill = Colour(len(t.Phases))
			}
			row.Spans = append(row.Spans, spanShape{
				// A phase of no visible length still shows as a sliver.
				X: coord(x0), Y: coord(y + 4), W: coord(max(x1-x0, 1.5)), H: coord(rowHeight - 8),
				Fill: fill, Phase: s.Phase, Length: length,
				Title: fmt.Sprintf("%s: %s %s, %s", r.Label, s.Phase, length, s.From.UTC().Format("15:04:05 MST")),
			})
		}
		l.Rows = append(l.Rows, row)
	}
	return l
}

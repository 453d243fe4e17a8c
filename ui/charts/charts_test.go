package charts

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
)

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestNiceMaxIsARoundNumberAtOrAboveTheTop(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {1, 1}, {0.3, 0.4}, {7, 10}, {12, 20}, {20, 20}, {21, 25}, {26, 40}, {41, 50}, {51, 100}, {1234, 2000},
	} {
		if got := niceMax(c.in); got != c.want {
			t.Errorf("niceMax(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestBarsStackOnOneScaleWithTotals(t *testing.T) {
	t.Parallel()
	b := Bars{Title: "Tokens", Unit: "tokens", Categories: []string{"d1", "d2", "d3"}, Series: []Series{
		{Name: "a", Values: []float64{10, 0, 5}},
		{Name: "b", Values: []float64{30, 0, -4}}, // negative: drawn as nothing
	}}
	l := b.layout()
	if l.Total != "45" || l.Empty {
		t.Fatalf("total %q empty %v, want 45 and not empty", l.Total, l.Empty)
	}
	if got := []string{l.Stacks[0].Total, l.Stacks[1].Total, l.Stacks[2].Total}; got[0] != "40" || got[1] != "" || got[2] != "5" {
		t.Errorf("bar totals %q, want 40, none, 5", got)
	}
	// The tallest stack (40) fills the plot: the scale's top is 40.
	if top := l.Ticks[len(l.Ticks)-1]; top.Label != "40" || top.Y != coord(padTop) {
		t.Errorf("top tick %+v, want 40 at %d", top, padTop)
	}
	first := l.Stacks[0].Segments
	if len(first) != 2 || first[0].Y != coord(Height-padBottom-float64(Height-padTop-padBottom)/4) || first[1].Y != coord(padTop) {
		t.Errorf("segments of the first bar %+v: a from the bottom, b on top to the plot's top", first)
	}
	if l.Legend[0].Total != "15" || l.Legend[1].Total != "30" {
		t.Errorf("legend totals %+v, want a 15, b 30", l.Legend)
	}
}

func TestBarsWithoutDataSaySo(t *testing.T) {
	t.Parallel()
	for _, b := range []Bars{
		{ID: "none", Title: "Tokens"},
		{ID: "zeros", Title: "Tokens", Categories: []string{"d1"}, Series: []Series{{Name: "a", Values: []float64{0}}}},
	} {
		out := render(t, BarChart(b))
		if !strings.Contains(out, "Nothing in this window") || !strings.Contains(out, `data-total="0"`) {
			t.Errorf("%s: no empty message or total 0:\n%s", b.ID, out)
		}
		if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("%s: a coordinate is not a number:\n%s", b.ID, out)
		}
	}
}

func TestChartsEscapeLabels(t *testing.T) {
	t.Parallel()
	evil := `<script>alert(1)</script>"x`
	bars := render(t, BarChart(Bars{ID: "e", Title: evil, Unit: "tokens", Categories: []string{evil},
		Series: []Series{{Name: evil, Values: []float64{1}}}}))
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tl := render(t, TimelineChart(Timeline{ID: "t", Title: evil, Start: now, End: now.Add(time.Minute), Phases: []string{evil},
		Rows: []TimelineRow{{Label: evil, Spans: []Span{{Phase: evil, From: now, Open: true}}}}}))
	for name, out := range map[string]string{"bars": bars, "timeline": tl} {
		if strings.Contains(out, "<script>") || strings.Contains(out, `"x"`) {
			t.Errorf("%s: a label went out unescaped:\n%s", name, out)
		}
		if !strings.Contains(out, `<span class="series">&lt;script&gt;alert(1)&lt;/script&gt;&#34;x</span>`) {
			t.Errorf("%s: the legend lacks the series' name:\n%s", name, out)
		}
	}
}

func TestTimelinePlacesPhasesOnTheAxis(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tl := Timeline{Start: t0, End: t0.Add(100 * time.Second), Phases: []string{"queued", "running"},
		Rows: []TimelineRow{{Label: "main", Spans: []Span{
			{Phase: "queued", From: t0, To: t0.Add(25 * time.Second)},
			{Phase: "running", From: t0.Add(25 * time.Second), Open: true},
		}}}}
	l := tl.layout()
	plotW := float64(Width - timelinePadLeft - padRight)
	q, r := l.Rows[0].Spans[0], l.Rows[0].Spans[1]
	if q.X != coord(timelinePadLeft) || q.W != coord(plotW/4) || q.Fill != Colour(0) || q.Length != "25s" {
		t.Errorf("queued span %+v: a quarter of the axis from its start", q)
	}
	if r.X != coord(timelinePadLeft+plotW/4) || r.W != coord(plotW*3/4) || r.Length != "1m15s so far" {
		t.Errorf("running span %+v: the rest of the axis, open", r)
	}
	if l.Length != "1m40s" || l.Empty {
		t.Errorf("length %q empty %v", l.Length, l.Empty)
	}
	// No length at all (not started) must not divide by zero.
	if e := (Timeline{Start: t0, End: t0}).layout(); !e.Empty {
		t.Error("a timeline of no length is not empty")
	}
}

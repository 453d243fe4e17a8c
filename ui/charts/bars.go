package charts

import "fmt"

// Bars is a stacked bar chart: one bar per category (a day, an hour), each
// split into series (a project, a user, a queue) stacked in order.
type Bars struct {
	// ID is the figure's element ID (tests and links find it by it).
	ID string
	// Title names the chart (its accessible name); Unit is what the
	// values count ("tokens", "GPUs").
	Title, Unit string
	// Categories label the bars, left to right.
	Categories []string
	// Series are stacked bottom-up; each has one value per category.
	// Negative values are drawn as nothing (a bar chart of amounts).
	Series []Series
	// Format writes a value; nil takes Number.
	Format func(float64) string
	// Note is said under the chart (what the values are, the window).
	Note string
}

// Series is one named row of values.
type Series struct {
	Name   string
	Values []float64
}

// barsLayout is a Bars chart with coordinates.
type barsLayout struct {
	Bars
	Empty  bool
	Total  string // the sum of every value, formatted
	Ticks  []tick
	Stacks []bar
	Legend []legendItem
	// Every is the step between category labels shown (all when 1).
	Every int
}

type tick struct {
	Y     string
	Label string
}

type bar struct {
	X, W, LabelX string
	Label        string // the category
	Total        string // the bar's total, formatted; "" when zero
	TotalY       string
	ShowLabel    bool
	Segments     []segment
}

type segment struct {
	Y, H, Fill string
	Title      string // "project a, 2026-11-30: 12.5 tokens"
}

type legendItem struct {
	Name, Fill, Total string
}

func (b Bars) format(v float64) string {
	if b.Format != nil {
		return b.Format(v)
	}
	return Number(v)
}

// value is series s's value at category i, never negative (missing: 0).
func (s Series) value(i int) float64 {
	if i >= len(s.Values) || s.Values[i] < 0 {
		return 0
	}
	return s.Values[i]
}

// maxBarTotals is how many bars still have room for their total above
// them; with more, each segment's title and the caption's total tell.
const maxBarTotals = 16

// layout places the bars: a shared scale from zero to a round number above
// the tallest stack.
func (b Bars) layout() barsLayout {
	l := barsLayout{Bars: b, Every: 1}
	totals := make([]float64, len(b.Categories))
	var all, top float64
	seriesTotals := make([]float64, len(b.Series))
	for i := range b.Categories {
		for j, s := range b.Series {
			v := s.value(i)
			totals[i] += v
			seriesTotals[j] += v
		}
		all += totals[i]
		top = max(top, totals[i])
	}
	l.Total = b.format(all)
	l.Empty = all == 0
	scale := niceMax(top)
	plotW, plotH := float64(Width-padLeft-padRight), float64(Height-padTop-padBottom)
	y := func(v float64) float64 { return padTop + plotH - v/scale*plotH }
	for k := 0; k <= 4; k++ {
		v := scale * float64(k) / 4
		l.Ticks = append(l.Ticks, tick{Y: coord(y(v)), Label: b.format(v)})
	}
	n := len(b.Categories)
	if n == 0 {
		return l
	}
	// Labels need about 44 units each; thin them out on many bars.
	l.Every = max(1, (n*44+int(plotW)-1)/int(plotW))
	slot := plotW / float64(n)
	w := slot * 0.7
	for i, c := range b.Categories {
		x := padLeft + slot*float64(i) + (slot-w)/2
		br := bar{X: coord(x), W: coord(w), LabelX: coord(x + w/2), Label: c, ShowLabel: i%l.Every == 0,
			TotalY: coord(y(totals[i]) - 4)}
		if totals[i] > 0 && n <= maxBarTotals {
			br.Total = b.format(totals[i])
		}
		base := 0.0
		for j, s := range b.Series {
			v := s.value(i)
			if v == 0 {
				continue
			}
			br.Segments = append(br.Segments, segment{
				Y: coord(y(base + v)), H: coord(y(base) - y(base+v)), Fill: Colour(j),
				Title: fmt.Sprintf("%s, %s: %s %s", s.Name, c, b.format(v), b.Unit),
			})
			base += v
		}
		l.Stacks = append(l.Stacks, br)
	}
	for j, s := range b.Series {
		l.Legend = append(l.Legend, legendItem{Name: s.Name, Fill: Colour(j), Total: b.format(seriesTotals[j])})
	}
	return l
}

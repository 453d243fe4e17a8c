// Package charts draws the dashboard's pictures as SVG on the server: no
// scripts, no fonts or files from elsewhere. A chart is a value (its data
// and words); layout turns it into shapes with coordinates, and the templ
// components write those. Every number a chart shows is also in its text
// (bar totals, a total in the caption, a title per shape), so it can be
// read without seeing the picture.
package charts

import (
	"math"
	"strconv"
	"strings"
)

// Width and Height are the drawing's user units; the SVG scales to its box.
const (
	Width  = 720
	Height = 260
)

// The plot area inside the drawing: room on the left for the scale, at the
// bottom for the category labels, at the top for the bar totals.
const (
	padLeft   = 56
	padRight  = 12
	padTop    = 22
	padBottom = 36
)

// palette colours the series in order; one more series than colours
// starts again (the legend still tells them apart by name and order).
var palette = []string{"#2457c5", "#e07b39", "#3a8a3a", "#9c4fb8", "#c23b5a", "#1e9aa8", "#8a6d1e", "#5b636e"}

// Colour is the fill of series i.
func Colour(i int) string { return palette[i%len(palette)] }

// Number formats v for a chart: at most two decimals, no trailing zeros.
func Number(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// niceMax is the top of a scale covering v: 1, 2 or 5 times a power of
// ten, so the ticks (quarters of it) are round numbers. Nothing (v <= 0)
// still gets a scale of 1.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 4, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// coord formats a coordinate with one decimal: enough for a 720-unit
// drawing, short in the page.
func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

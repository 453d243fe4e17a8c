package apps

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
)

// appRow is an app as the table and its page show it, formatted.
type appRow struct {
	ID, Name, State string
	Ephemeral       bool
	Owner           string // email, or "—" when the viewer may not see the owner
	Functions       int    // of the live version
	Versions        string // "v2 / v3": live / latest; "—" for an ephemeral app
	Kinds           string // the live version's kind mix: "2 FUNCTION · 1 CRON"
	Created         string
}

// kindOrder lists function kinds in the order the kind mix names them.
var kindOrder = []function.Kind{function.KindFUNCTION, function.KindENDPOINT, function.KindASGI,
	function.KindREALTIME, function.KindTASK_QUEUE, function.KindCRON}

// newAppRow formats a with its live version's functions counted by kind;
// its owner edge is read when loaded.
func newAppRow(a *ent.App, kinds map[string]int) appRow {
	row := appRow{ID: a.ID, Name: a.Name, State: string(a.State), Ephemeral: a.Ephemeral,
		Owner: "—", Versions: "—", Kinds: "—", Created: when(&a.CreatedAt)}
	if a.Edges.Owner != nil {
		row.Owner = a.Edges.Owner.Email
	}
	if !a.Ephemeral {
		row.Versions = "v" + strconv.Itoa(a.LiveVersion) + " / v" + strconv.Itoa(a.Version)
	}
	var mix []string
	for _, k := range kindOrder {
		if n := kinds[string(k)]; n > 0 {
			row.Functions += n
			mix = append(mix, strconv.Itoa(n)+" "+string(k))
		}
	}
	if len(mix) > 0 {
		row.Kinds = strings.Join(mix, " · ")
	}
	return row
}

// when formats a moment with its zone (UTC), to the second, or "—".
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 MST")
}

// span is how long from start to end (or to now while running), to the
// millisecond below a second (calls are often that short), or "—" before
// the start.
func span(start, end *time.Time, now time.Time) string {
	if start == nil {
		return "—"
	}
	stop := now
	if end != nil {
		stop = *end
	}
	return short(stop.Sub(*start))
}

// short formats d for people: 850ms, 1.25s, 3m20s.
func short(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// gpuSpec is a function's GPU request: "none", "2 × H100", "1 × H100 or A100".
func gpuSpec(f *ent.Function) string {
	if f.Gpus == 0 {
		return "none"
	}
	types := "any type"
	if len(f.GpuTypes) > 0 {
		types = strings.Join(f.GpuTypes, " or ")
	}
	return strconv.Itoa(f.Gpus) + " × " + types
}

// cpus formats a CPU count without trailing zeros.
func cpus(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// mib formats a memory size in MiB.
func mib(v int64) string {
	if v >= 1024 && v%1024 == 0 {
		return fmt.Sprintf("%d GiB", v/1024)
	}
	return fmt.Sprintf("%d MiB", v)
}

func itoa(n int) string { return strconv.Itoa(n) }

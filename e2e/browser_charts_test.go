package e2e

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// The dashboard's charts in a browser, against the real server: the
// Tokens page draws spending per day with the right totals (two jobs'
// start fees of 2 tokens: 4), the admin's queue page its depth chart, and
// the Nodes page follows the local node's state live.
func TestBrowserCharts(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	grant(t, s.URL, c.Token)
	queueID := firstID(t, s.URL, c.Token, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, "queues")
	gql(t, s.URL, c.Token, `mutation($q: ID!) { updateQueue(id: $q, input: {startFee: 2}) { id } }`, map[string]any{"q": queueID}, new(map[string]any))
	poll(t, "the local node online", func() bool {
		n := nodeByName(t, s.URL, c.Token, "local")
		return n != nil && n.Status == "ONLINE"
	})
	var jobIDs []string
	for i := range 2 {
		var sub struct{ SubmitJob struct{ ID string } }
		gql(t, s.URL, c.Token, fmt.Sprintf(`mutation { submitJob(spec: {name: "charted-%d", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 64}]}) { id } }`, i), nil, &sub)
		poll(t, "the job to end", func() bool {
			st := jobByID(t, s.URL, c.Token, sub.SubmitJob.ID).Status
			return st != "PENDING" && st != "RUNNING"
		})
		jobIDs = append(jobIDs, sub.SubmitJob.ID)
	}

	tb := newTab(t, s.URL)
	tb.signIn(c.AdminEmail, c.AdminPassword)
	tb.open("/tokens?kind=START")
	for _, id := range []string{"spent-by-project", "spent-by-user", "spent-by-queue"} {
		total := run(tb, "reading the total of "+id, chromedp.Evaluate[string](
			fmt.Sprintf(`document.getElementById(%q).dataset.total`, id)))
		if total != "4.000" {
			t.Errorf("%s: total %q, want 4.000 (two start fees of 2)", id, total)
		}
	}
	// Drawn: today's bar has a segment, its total above it; the caption
	// and legend say it in words.
	if n := run(tb, "counting bars", chromedp.Evaluate[int](`document.querySelectorAll("#spent-by-user svg g.bar rect").length`)); n != 1 {
		t.Errorf("%d bar segments on the user chart, want today's one", n)
	}
	if got := tb.text("#spent-by-user .bar-total"); got != "4.000" {
		t.Errorf("today's bar is labelled %q, want 4.000", got)
	}
	tb.waitText("#spent-by-user figcaption", "4.000 tokens in all")
	tb.waitText("#spent-by-user .legend", c.AdminEmail)
	tb.waitText("#spent-by-queue .legend", "default")
	if w := run(tb, "measuring the chart", chromedp.Evaluate[float64](`document.querySelector("#spent-by-user svg").getBoundingClientRect().width`)); w < 100 {
		t.Errorf("the chart is %.0f px wide: not drawn", w)
	}

	// The job page draws the ended job's timeline: queued, then running,
	// then its end, for its one service.
	tb.open("/jobs/" + jobIDs[0])
	tb.waitText("#job-timeline figcaption", "Timeline of charted-0")
	phases := run(tb, "reading the timeline", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#job-timeline g.row[data-label="main"] rect.span')).map(r => r.dataset.phase)`))
	if len(phases) < 3 || phases[0] != "queued" || phases[len(phases)-2] != "running" || phases[len(phases)-1] != "ended" {
		t.Errorf("the timeline's phases %q, want queued … running, ended", phases)
	}

	tb.open("/admin/queues")
	total := run(tb, "reading the queue depth", chromedp.Evaluate[string](`(document.querySelector("#queue-depth") || {dataset: {}}).dataset.total || ""`))
	if v, err := strconv.ParseFloat(total, 64); err != nil || v < 0 {
		t.Errorf("queue depth total %q: no chart", total)
	}

	// The nodes table follows the node live: a job placed on it takes
	// CPUs (patched in place, no reload) and changes its running list
	// (which a patch cannot redraw: the page says it is stale).
	tb.open("/nodes")
	local := nodeByName(t, s.URL, c.Token, "local")
	cpus := "#node-" + local.ID + "-cpus"
	before := tb.text(cpus)
	run(tb, "marking the page", chromedp.Evaluate[chromedp.Void](`window.levers9Marker = "same page"`))
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation { submitJob(spec: {name: "sleeper", queue: "default", services: [{name: "main", command: ["sleep", "600"], cpu: 1, memoryMiB: 64}]}) { id } }`, nil, &sub)
	tb.waitText("#live-stale", "Nodes or the jobs on them changed.")
	if got := tb.text(cpus); got == before {
		t.Errorf("free CPUs still %q after a job took one", got)
	}
	if m := run(tb, "reading the marker", chromedp.Evaluate[string](`String(window.levers9Marker)`)); m != "same page" {
		t.Fatalf("the node's state came with a reload (marker %q), not live", m)
	}
	gql(t, s.URL, c.Token, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, map[string]any{"id": sub.SubmitJob.ID}, new(map[string]any))
}

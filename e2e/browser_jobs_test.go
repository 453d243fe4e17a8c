package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// A user submits a job on the local node from the form and watches its
// log lines arrive in the service panel while it runs, without reloading;
// the jobs table expands to its services; the Tokens page lists its charges.
func TestBrowserSubmitAndFollowLogs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		// A start fee makes the job's charge visible; a grant pays for it.
		queueID := firstID(t, s.URL, c.Token, `{ queues(where: {name: "default"}) { edges { node { id } } } }`, "queues")
		var me struct {
			Viewer struct{ User struct{ ID string } }
		}
		gql(t, s.URL, c.Token, `{ viewer { user { id } } }`, nil, &me)
		gql(t, s.URL, c.Token, `mutation($q: ID!) { updateQueue(id: $q, input: {startFee: 2}) { id } }`, map[string]any{"q": queueID}, new(map[string]any))
		gql(t, s.URL, c.Token, `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100, reason: "browser test"}) { id } }`,
			map[string]any{"u": me.Viewer.User.ID}, new(map[string]any))

		// The job prints a line, waits for the test, prints another, waits
		// again: the second line can only reach an open page live.
		// The job runs as a job user of its own: the flags live where it may look.
		flags, err := os.MkdirTemp("", "levers9-browser-flags-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(flags) })
		if err := os.Chmod(flags, 0o755); err != nil {
			t.Fatal(err)
		}
		first, second := filepath.Join(flags, "first"), filepath.Join(flags, "second")
		command := fmt.Sprintf("echo live-one; while [ ! -e %s ]; do sleep 0.05; done; echo live-two; while [ ! -e %s ]; do sleep 0.05; done; echo bye", first, second)

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/submit")
		tb.setValue("#name", "browser-job")
		tb.setValue("#svc0-command", command)
		tb.setValue("#svc0-cpu", "0.1")
		tb.setValue("#svc0-memoryMiB", "64")
		// A click by coordinates can miss when the live estimate re-renders
		// above the button on a loaded machine; pressing it through the DOM
		// submits the form the same way.
		tb.do("submitting", chromedp.WaitVisible(chromedp.ID("submit-job")),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("submit-job").click()`),
			chromedp.WaitVisible(chromedp.ID("panel")))
		loc := run(tb, "reading the location", chromedp.Location())
		jobID := strings.TrimPrefix(strings.SplitN(loc, "?", 2)[0], s.URL+"/jobs/")
		if !strings.HasPrefix(jobID, "job_") {
			t.Fatalf("after submitting the browser is at %s; want the job's page", loc)
		}

		tb.waitText("#logs", "live-one")
		run(tb, "marking the page", chromedp.Evaluate[chromedp.Void](`window.levers9Marker = "same page"`))
		if !tb.present("pre[data-follow]") {
			t.Fatal("the panel of a running job does not follow its logs")
		}
		if err := os.WriteFile(first, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		tb.waitText("#logs", "live-two")
		if m := run(tb, "reading the marker", chromedp.Evaluate[string](`String(window.levers9Marker)`)); m != "same page" {
			t.Fatalf("the second line came with a reload (marker %q), not live", m)
		}
		if err := os.WriteFile(second, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// Once the job ends the page shows its final state.
		tb.waitText("#service-status", "COMPLETE")
		tb.waitText("#logs", "bye")
		if got := tb.text("#service-exit"); got != "0" {
			t.Errorf("exit code shown %q; want 0", got)
		}

		// The table row expands to the services; a service opens the panel.
		tb.open("/jobs")
		tb.waitText("#jobs", "browser-job")
		row := "#job-" + jobID
		tb.do("expanding the job's row",
			chromedp.Click(chromedp.CSS(row+" summary")),
			chromedp.Click(chromedp.CSS(row+" ul.services a")),
			chromedp.WaitVisible(chromedp.ID("panel")),
		)
		tb.waitText("#panel-title", "main")

		// The Tokens page lists the job's charges, the job by its name
		// (metering may trail the job's end by a moment).
		deadline := time.Now().Add(time.Minute)
		for {
			tb.open("/tokens?job=" + jobID)
			if txt := tb.text("#charges"); strings.Contains(txt, "browser-job") && strings.Contains(txt, "START") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Tokens page shows no START charge of %s: %q", jobID, tb.text("main"))
			}
			time.Sleep(200 * time.Millisecond)
		}
		tb.waitText("#totals", "START")
	})
}

// The estimate is priced by the server's own function as the form changes:
// more GPUs, a higher price, the same numbers GraphQL's estimateJobCost
// gives. No node has GPUs: an estimate needs no placement.
func TestBrowserEstimateFollowsGPUCount(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		group := firstID(t, s.URL, c.Token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, "groups")
		gql(t, s.URL, c.Token, `mutation($g: ID!) { createQueue(input: {name: "gpu", maxGpusPerJob: 8, gpuPrices: [{type: "H100", perMinute: 2.5}], cpuPrice: 0.01, memoryPrice: 0.001, startFee: 1, groupIDs: [$g]}) { id } }`,
			map[string]any{"g": group}, new(map[string]any))
		want := func(gpus int) string {
			var out struct {
				EstimateJobCost struct{ PerMinute json.Number }
			}
			gql(t, s.URL, c.Token, `query($g: Int!) { estimateJobCost(spec: {queue: "gpu", services: [{name: "main", command: ["sh", "-c", "true"], cpu: 1, memoryMiB: 512, gpus: $g, gpuTypes: ["H100"]}]}, minutes: 60) { perMinute } }`,
				map[string]any{"g": gpus}, &out)
			return string(out.EstimateJobCost.PerMinute)
		}
		none, two := want(0), want(2)
		if none == two {
			t.Fatalf("the queue prices 0 and 2 GPUs the same (%s): the test proves nothing", none)
		}

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/submit")
		tb.waitText("#queue-limits", "H100 2.5/GPU-min")
		// Nothing typed yet: no problem shows, though the form has some.
		if got := tb.text("#estimate-problems"); got != "" || tb.present(".live-errors") {
			t.Errorf("problems shown before the user acted: %q", got)
		}
		tb.setValue("#queue", "gpu")
		tb.setValue("#svc0-command", "true")
		// The GPU type choices are the chosen queue's prices.
		h100 := `#svc0-gpuTypes input[value="H100"]`
		tb.do("ticking H100", chromedp.WaitVisible(h100), chromedp.Click(h100))
		tb.setValue("#svc0-gpus", "0")
		tb.waitText("#estimate", none+" tokens/minute")
		tb.setValue("#svc0-gpus", "2")
		tb.waitText("#estimate", two+" tokens/minute")
		// Asking for more than the queue allows shows why, and no price.
		tb.setValue("#svc0-gpus", "9")
		tb.waitText("#estimate-problems", "Services: the job asks for 9 GPUs")
		// A field's problem shows next to it, in words, not at a path.
		tb.setValue("#svc0-name", "Main Service")
		tb.waitText("#service-0 .live-errors", "not a valid service name")
		if txt := tb.text("main"); strings.Contains(txt, "services[0]") {
			t.Errorf("the form shows a field path: %q", txt)
		}
	})
}

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// submitGQL submits spec (GraphQL JobSpecInput syntax) as the admin token
// and returns the job's ID.
func submitGQL(t *testing.T, s *server, token, spec string) string {
	t.Helper()
	var out struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, token, `mutation { submitJob(spec: `+spec+`) { id } }`, nil, &out)
	if out.SubmitJob.ID == "" {
		t.Fatalf("submitting %s: no job", spec)
	}
	return out.SubmitJob.ID
}

// flagDir is a directory a job's user may read, for the test to signal
// the job through files.
func flagDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "levers9-browser-flags-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitJS waits until the expression is true on the page.
func (tb *tab) waitJS(what, expr string) {
	tb.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.t.Fatalf("waiting until %s: never (%s)", what, expr)
}

// A multi-service job's page opens its first service's log at once, at
// the end of a long log; scrolling up stops following and "Jump to end"
// resumes. The jobs table turns the row COMPLETE when the job ends,
// without a reload.
func TestBrowserLiveJobsAndLogs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		done := filepath.Join(flagDir(t), "done")
		wait := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done", done)
		// Services in spec order trainer, db: the first is not the first by name.
		id := submitGQL(t, s, c.Token, fmt.Sprintf(`{name: "live-job", queue: "default", services: [
			{name: "trainer", command: ["sh", "-c", %q], cpu: 0.1, memoryMiB: 64},
			{name: "db", command: ["sh", "-c", %q], cpu: 0.1, memoryMiB: 64}]}`,
			"i=0; while [ $i -lt 400 ]; do echo line-$i; i=$((i+1)); done; "+wait+"; echo bye", wait))

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/jobs/" + id)
		tb.waitText("#panel-title", "trainer")
		tb.waitText("#logs", "line-399")
		atEnd := `(() => { const p = document.getElementById("logs"); return p.scrollHeight > p.clientHeight && p.scrollTop + p.clientHeight >= p.scrollHeight - 4; })()`
		tb.waitJS("the long log shows its end", atEnd)
		tb.waitJS("following is on", `document.getElementById("log-follow").checked`)
		run(tb, "scrolling the log up", chromedp.Evaluate[chromedp.Void](`(() => { const p = document.getElementById("logs"); p.scrollTop = 0; p.dispatchEvent(new Event("scroll")); })()`))
		tb.waitJS("scrolling up stops following", `!document.getElementById("log-follow").checked`)
		tb.do("jumping to the end", chromedp.Click(chromedp.ID("log-jump")))
		tb.waitJS("the jump shows the end again", atEnd+` && document.getElementById("log-follow").checked`)

		tb.open("/jobs")
		status := "#job-" + id + "-status"
		tb.waitText(status, "RUNNING")
		run(tb, "marking the page", chromedp.Evaluate[chromedp.Void](`window.levers9Marker = "same page"`))
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		tb.waitText(status, "COMPLETE")
		if m := run(tb, "reading the marker", chromedp.Evaluate[string](`String(window.levers9Marker)`)); m != "same page" {
			t.Fatalf("the row turned COMPLETE with a reload (marker %q), not live", m)
		}
		if got := tb.text("#job-" + id + "-took"); got == "—" || got == "" {
			t.Errorf("the ended job's duration shows %q", got)
		}
	})
}

// Unknown paths get the 404 page; on a phone-sized screen the jobs table
// scrolls in its box and the page itself never scrolls sideways.
func TestBrowserNotFoundAndPhoneLayout(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	for i := range 3 {
		submitGQL(t, s, c.Token, fmt.Sprintf(`{name: "a-rather-long-job-name-for-a-narrow-screen-%d", queue: "default", services: [{name: "main", command: ["true"], cpu: 0.1, memoryMiB: 64}]}`, i))
	}
	tb := newTab(t, s.URL)
	tb.signIn(c.AdminEmail, c.AdminPassword)
	if got := tb.open("/no/such/page"); got != http.StatusNotFound {
		t.Errorf("unknown path: %d; want 404", got)
	}
	tb.waitText("h1", "Page not found")
	if !tb.present(`.error-links a[href="/jobs"]`) {
		t.Error("the 404 page offers no way on to the jobs")
	}
	tb.do("narrowing to a phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2)))
	for _, path := range []string{"/jobs", "/submit", "/no/such/page"} {
		tb.open(path)
		tb.waitJS("the page has laid out", `document.readyState === "complete"`)
		if w := run(tb, "measuring "+path, chromedp.Evaluate[string](
			`document.documentElement.scrollWidth + "/" + document.documentElement.clientWidth`)); !sameWidth(w) {
			t.Errorf("%s on a phone overflows sideways: scroll/client width %s", path, w)
		}
	}
}

func sameWidth(w string) bool {
	a, b, _ := strings.Cut(w, "/")
	return a == b
}

// TestBrowserScreenshots writes the README's dashboard pictures into
// docs/screenshots, only when LEVERS9_SCREENSHOTS=1 (make screenshots):
// tests never write into the checkout otherwise.
func TestBrowserScreenshots(t *testing.T) {
	if os.Getenv("LEVERS9_SCREENSHOTS") != "1" {
		t.Skip("set LEVERS9_SCREENSHOTS=1 (make screenshots) to write docs/screenshots")
	}
	out, err := filepath.Abs(filepath.Join("..", "docs", "screenshots"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	done := filepath.Join(flagDir(t), "done")
	wait := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done", done)
	submitGQL(t, s, c.Token, `{name: "prepare-data", queue: "default", services: [{name: "main", command: ["sh", "-c", "echo sharding; echo done"], cpu: 0.1, memoryMiB: 64}]}`)
	submitGQL(t, s, c.Token, `{name: "eval-baseline", queue: "default", services: [{name: "main", command: ["sh", "-c", "echo missing checkpoint >&2; exit 3"], cpu: 0.1, memoryMiB: 64}]}`)
	id := submitGQL(t, s, c.Token, fmt.Sprintf(`{name: "train-resnet", queue: "default", services: [
		{name: "trainer", command: ["sh", "-c", %q], cpu: 0.2, memoryMiB: 128},
		{name: "tensorboard", command: ["sh", "-c", %q], cpu: 0.1, memoryMiB: 64}]}`,
		`i=1; while [ $i -le 60 ]; do echo "epoch $i/60 loss=0.$((100-i)) acc=0.$((40+i/2))"; i=$((i+1)); done; `+wait, wait))
	t.Cleanup(func() { _ = os.WriteFile(done, nil, 0o644) })
	submitGQL(t, s, c.Token, `{queue: "default", services: [{name: "main", command: ["sleep", "600"], cpu: 0.1, memoryMiB: 64}]}`)

	tb := newTab(t, s.URL)
	tb.signIn(c.AdminEmail, c.AdminPassword)
	shot := func(name string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)                              // the live stream's first patch
		png := run(tb, "capturing "+name, chromedp.FullScreenshot(100)) // 100: PNG, not JPEG
		if err := os.WriteFile(filepath.Join(out, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb.open("/jobs/" + id)
	tb.waitText("#logs", "epoch 60/60")
	shot("job")
	tb.open("/jobs")
	tb.waitText("#jobs", "eval-baseline")
	tb.waitText("#jobs", "ERROR")
	shot("jobs")
	group := firstID(t, s.URL, c.Token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, "groups")
	gql(t, s.URL, c.Token, `mutation($g: ID!) { createQueue(input: {name: "gpu", maxGpusPerJob: 8, gpuPrices: [{type: "H100", perMinute: 2.5}, {type: "A100", perMinute: 1.6}], cpuPrice: 0.01, memoryPrice: 0.001, startFee: 1, groupIDs: [$g]}) { id } }`,
		map[string]any{"g": group}, new(map[string]any))
	tb.open("/submit")
	tb.setValue("#name", "finetune-llama")
	tb.setValue("#queue", "gpu")
	tb.setValue("#svc0-command", "python finetune.py --epochs 3")
	h100 := `#svc0-gpuTypes input[value="H100"]`
	tb.do("ticking H100", chromedp.WaitVisible(h100), chromedp.Click(h100))
	tb.setValue("#svc0-gpus", "2")
	tb.waitText("#estimate", "tokens/minute")
	shot("submit")
	for _, p := range []struct{ path, name string }{{"/tokens", "tokens"}, {"/nodes", "nodes"}, {"/no/such/page", "not-found"}} {
		tb.open(p.path)
		tb.waitJS("the page has laid out", `document.readyState === "complete"`)
		shot(p.name)
	}
	tb.do("narrowing to a phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2)))
	tb.open("/jobs")
	tb.waitText("#jobs", "train-resnet")
	shot("jobs-phone")
}

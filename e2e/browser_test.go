package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser tests drive Debian's Chromium (the chromium package) through
// chromedp against the built binary. Without Chromium they fail, unless
// LEVERS9_SKIP_BROWSER=1 says to skip them on purpose.

// stepTimeout bounds one browser step; generous, as it only catches hangs.
const stepTimeout = 90 * time.Second

// chromiumPath finds the browser or ends the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LEVERS9_SKIP_BROWSER") == "1" {
		t.Skip("LEVERS9_SKIP_BROWSER=1: skipping the browser test")
	}
	t.Fatal("the browser tests need Chromium: install Debian's package (apt-get install -y chromium; .ci/run does), " +
		"or set LEVERS9_SKIP_BROWSER=1 to skip them")
	return ""
}

// tab is one browser tab on a levers9 server.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// newTab starts a headless Chromium of its own for t. When t fails, the
// tab's last page is saved as a PNG and its path logged.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless,
		chromedp.NoSandbox, // root in CI containers
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	tb := &tab{t: t, ctx: ctx, base: base}
	t.Cleanup(tb.screenshotOnFailure) // runs before the browser closes
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return tb
}

// screenshotOnFailure saves the page when the test failed, where it
// survives the test: $LEVERS9_TEST_ARTIFACTS or a temporary directory.
func (tb *tab) screenshotOnFailure() {
	if !tb.t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	var png []byte
	var err error
	for range 5 { // a page that is navigating has nothing to capture yet
		if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err != nil {
		tb.t.Logf("no screenshot: %v", err)
		return
	}
	dir := os.Getenv("LEVERS9_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "levers9-browser-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Logf("no screenshot: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(tb.t.Name()) + "-" + time.Now().Format("150405.000") + ".png"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("no screenshot: %v", err)
		return
	}
	if url, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		tb.t.Logf("screenshot of %s saved to %s", url, path)
	} else {
		tb.t.Logf("screenshot saved to %s", path)
	}
}

// do runs steps, failing the test with what it was doing.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// run runs one step with a value.
func run[T any](tb *tab, what string, step chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, step)
	if err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open navigates to path and returns the HTTP status of the page.
func (tb *tab) open(path string) int {
	tb.t.Helper()
	res := run(tb, "opening "+path, chromedp.NavigateResponse(tb.base+path))
	if res == nil {
		tb.t.Fatalf("opening %s: no response", path)
	}
	return int(res.Status)
}

// waitText waits until the element sel's text contains want. It checks
// the page again and again rather than once with a page-side poll, which a
// navigation (a form post, the reload at a job's end) would break off.
func (tb *tab) waitText(sel, want string) {
	tb.t.Helper()
	check := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	deadline := time.Now().Add(stepTimeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](check))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	tb.t.Fatalf("waiting for %q in %s: not there (last error: %v); the element holds %q", want, sel, last, tb.text(sel))
}

// text is the text of the first element sel matches.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return run(tb, "reading "+sel, chromedp.Evaluate[string](
		fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, sel)))
}

// present reports whether sel matches an element now.
func (tb *tab) present(sel string) bool {
	tb.t.Helper()
	return run(tb, "looking for "+sel, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
}

// signIn signs in through the form and waits for the signed-in page.
func (tb *tab) signIn(email, password string) {
	tb.t.Helper()
	tb.open("/signin")
	tb.do("signing in as "+email,
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.WaitVisible(chromedp.ID("sign-out")),
	)
}

// setValue replaces the value of a field as typing would, firing the
// events the page's script listens to.
func (tb *tab) setValue(sel, value string) {
	tb.t.Helper()
	// Tried from here again and again, like waitText: a page-side poll
	// dies with its execution context when the page is replaced under it
	// (a late load event, a reload), and the field is on the new page too.
	set := fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		if (!e) return false;
		e.value = %q;
		e.dispatchEvent(new Event("input", {bubbles: true}));
		e.dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})()`, sel, value)
	deadline := time.Now().Add(stepTimeout - 5*time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](set))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	tb.t.Fatalf("setting %s: no such field on %s (last error: %v)", sel, tb.base, last)
}

// gqlID runs a GraphQL query as token and returns the first string the
// JSON path (edges/node/id style, dot-separated) reaches.
func firstID(t *testing.T, base, token, query, field string) string {
	t.Helper()
	var out map[string]struct {
		Edges []struct{ Node map[string]any }
	}
	gql(t, base, token, query, nil, &out)
	conn, ok := out[field]
	if !ok || len(conn.Edges) == 0 {
		t.Fatalf("%s: nothing in %s", query, field)
	}
	id, _ := conn.Edges[0].Node["id"].(string)
	return id
}

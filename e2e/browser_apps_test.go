package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// A user finds an app deployed through the API on the Apps page, opens
// it to its functions and a call, and reads the call's state and phases.
func TestBrowserApps(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/apps")
		tb.waitText("main", "No apps yet")

		// The code package is only stored and hashed here: no call runs.
		code := []byte("PK\x05\x06" + string(make([]byte, 18))) // an empty zip
		sum := sha256.Sum256(code)
		hash := hex.EncodeToString(sum[:])
		if status := putBlob(t, s.URL, c.Token, hash, code); status != http.StatusCreated {
			t.Fatalf("PUT /api/blobs/%s: %d, want 201", hash, status)
		}
		var deployed struct {
			DeployApp struct {
				ID        string
				Functions []struct{ ID string }
			}
		}
		gql(t, s.URL, c.Token, `mutation($h: String!) { deployApp(input: {name: "browser-app", code: $h,
			functions: [{name: "hello", module: "main", qualname: "hello", queue: "default", cpu: 0.25, memoryMiB: 128, concurrency: 3}]}) { id functions { id } } }`,
			map[string]any{"h": hash}, &deployed)
		appID := deployed.DeployApp.ID
		if len(deployed.DeployApp.Functions) != 1 {
			t.Fatalf("deployApp returned %d functions, want 1", len(deployed.DeployApp.Functions))
		}
		fnID := deployed.DeployApp.Functions[0].ID
		var called struct{ CallFunction struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation($f: ID!) { callFunction(function: $f, args: {data: "gAVOLg=="}) { id } }`,
			map[string]any{"f": fnID}, &called)
		taskID := called.CallFunction.ID

		tb.open("/apps")
		tb.waitText("#apps", "browser-app")
		tb.waitText("#app-"+appID, "ephemeral")
		tb.do("opening the app", chromedp.Click(chromedp.CSS("#app-"+appID+" a")), chromedp.WaitVisible(chromedp.ID("functions")))
		tb.waitText("#app-name", "browser-app")
		tb.waitText("#function-hello-v1", "default")
		tb.waitText("#calls", taskID)
		tb.do("opening the call", chromedp.Click(chromedp.CSS("#call-"+taskID+" a")), chromedp.WaitVisible(chromedp.ID("phases")))
		tb.waitText("#task-function", "hello")
		tb.waitText("#phases", "queued")
		tb.waitText("#phases", "+0s")
	})
}

// putBlob uploads body as a code blob named hash with token.
func putBlob(t *testing.T, base, token, hash string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, base+"/api/blobs/"+hash+"?kind=code", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// dashboardApp is deployed twice by its main: an endpoint in two
// versions, a task queue whose item fails while the file it names exists
// (so the test decides when a requeued item succeeds) and a yearly
// schedule whose next runs the test knows.
const dashboardApp = `import os
import sys

import levers9

app = levers9.App("dash-e2e")
SMALL = dict(cpu=0.1, memory=256)


@app.task_queue(retries=0, max_containers=1, **SMALL)
def jobs_q(path):
    if os.path.exists(path):
        raise RuntimeError("failing while %s exists" % path)
    return "done"


@app.schedule(cron="0 0 1 1 *", **SMALL)
def yearly():
    return "happy new year"


@app.endpoint(method="POST", **SMALL)
def hello(item):
    return item


if __name__ == "__main__":
    app.deploy()
    d = app.deploy()
    print("app:", d.app_id, flush=True)
    call = jobs_q.put(sys.argv[1])
    print("task:", call.object_id, flush=True)
    try:
        call.get(timeout=300)
        print("state: not dead", flush=True)
    except Exception as e:
        print("state:", call.state, type(e).__name__, flush=True)
`

var (
	appLine  = regexp.MustCompile(`(?m)^app: (\S+)$`)
	taskLine = regexp.MustCompile(`(?m)^task: (\S+)$`)
)

// An app deployed twice shows both versions serving and the newer one
// live, with its endpoint's URLs; its task queue's dead letter is listed,
// linked and requeued from the dashboard (and then succeeds); its
// schedule shows the next three ticks; its owner rolls back to v1 and
// stops v2 with the page's buttons.
func TestBrowserAppDeployments(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		s, c := functionsServer(t, url, "process")

		// The job's user (the process runtime) must see the flag file.
		dir, err := os.MkdirTemp("", "l9dash-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		flag := filepath.Join(dir, "fail")
		script := filepath.Join(dir, "dash_app.py")
		for path, body := range map[string]string{flag: "fail\n", script: dashboardApp} {
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		sdk, err := filepath.Abs(sdkDir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), fnTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "python3", script, flag)
		cmd.Env = append(append(cleanEnv(), fnEnv(t, s, c.Token)...), "PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
		outb, err := cmd.CombinedOutput()
		out := string(outb)
		if err != nil {
			t.Fatalf("deploying and putting: %v\n%s", err, out)
		}
		am, tm := appLine.FindStringSubmatch(out), taskLine.FindStringSubmatch(out)
		if am == nil || tm == nil {
			t.Fatalf("the script printed no app or task:\n%s", out)
		}
		appID, taskID := am[1], tm[1]
		if !regexp.MustCompile(`(?m)^state: DEAD `).MatchString(out) {
			t.Fatalf("the item did not end DEAD:\n%s", out)
		}

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/apps")
		tb.waitText("#app-"+appID, "DEPLOYED")
		tb.waitText("#app-"+appID+" .versions", "v2 / v2")
		tb.waitText("#app-"+appID+" .kinds", "1 ENDPOINT")
		tb.waitText("#app-"+appID+" .kinds", "1 TASK_QUEUE")
		tb.waitText("#app-"+appID+" .kinds", "1 CRON")

		tb.open("/apps/" + appID)
		tb.waitText("#version-v2", "live")
		tb.waitText("#version-v2", "serving")
		tb.waitText("#version-v1", "serving")
		if tb.present("#version-v1 .live") {
			t.Error("v1 is marked live; v2 is")
		}
		tb.waitText("#deployment-hello-v2", "live")
		tb.waitText("#deployment-hello-v2 .urls", s.URL+"/endpoint/hello/v2")
		tb.waitText("#deployment-hello-v1 .serving", "serving")
		tb.waitText("#deployment-hello-v1 .urls", s.URL+"/endpoint/hello/v1")
		if got := strings.TrimSpace(tb.text("#deployment-hello-v1 .urls")); got != s.URL+"/endpoint/hello/v1" {
			t.Errorf("v1's URLs are %q; want only its versioned one (the alias reaches v2)", got)
		}

		// The schedule's next three ticks: the next three New Year's
		// midnights, UTC.
		year := time.Now().UTC().Year()
		for i := 1; i <= 3; i++ {
			tb.waitText("#deployment-yearly-v2 .next-runs", strconv.Itoa(year+i)+"-01-01 00:00:00 UTC")
		}

		// The dead letter: counted, linked to the filtered list, requeued
		// once the file that made it fail is gone.
		tb.waitText("#deployment-jobs_q-v2 .dead", "1 dead")
		tb.do("opening the dead letters", chromedp.Click(chromedp.CSS("#deployment-jobs_q-v2 a.dead")),
			chromedp.WaitVisible(chromedp.ID("task-list")))
		tb.waitText("#task-filter", "DEAD")
		tb.waitText("#task-"+taskID, "DEAD")
		tb.waitText("#task-"+taskID, "QUEUE")
		if err := os.Remove(flag); err != nil {
			t.Fatal(err)
		}
		tb.do("requeueing", chromedp.Click(chromedp.ID("requeue-"+taskID)), chromedp.WaitVisible(chromedp.ID("task-filter")))
		tb.waitText("main", "queued again")
		tb.open("/tasks/" + taskID)
		tb.waitText("#task-source", "task queue put")
		deadline := time.Now().Add(3 * time.Minute)
		for !strings.Contains(tb.text("#task-state"), "COMPLETE") {
			if time.Now().After(deadline) {
				t.Fatalf("the requeued item did not complete: %q", tb.text("#task-state"))
			}
			time.Sleep(time.Second)
			tb.open("/tasks/" + taskID)
		}

		// The owner's buttons: v1 made live again, then v2 stopped.
		tb.open("/apps/" + appID)
		tb.do("rolling back to v1", chromedp.Click(chromedp.ID("rollback-v1")), chromedp.WaitVisible(chromedp.ID("versions")))
		tb.waitText("main", "now reach v1")
		tb.waitText("#version-v1 .live", "live")
		tb.do("stopping v2", chromedp.Click(chromedp.ID("stop-v2")), chromedp.WaitVisible(chromedp.ID("versions")))
		tb.waitText("main", "Version v2 stopped")
		tb.waitText("#version-v2", "stopped")
		tb.waitText("#deployment-hello-v2 .serving", "stopped")
		if got := strings.TrimSpace(tb.text("#deployment-hello-v2 .urls")); got != "—" {
			t.Errorf("a stopped version shows URLs %q", got)
		}
		tb.waitText("#deployment-hello-v1 .urls", s.URL+"/endpoint/hello/v1"+s.URL+"/endpoint/hello")
	})
}

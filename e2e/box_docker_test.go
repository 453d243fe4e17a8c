package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/dockertest"
)

// Boxes in real containers, reached through the relay: an app's
// @app.box(ports=[8000]) whose function starts `python3 -m http.server`
// (deployed with levers9 deploy), and `levers9 box run --port 8002 --
// python3 -m http.server 8002` (a command box) with the CLI binary; both
// answer GET /box/NAME/PORT/… (the first request starts the container);
// a port the box does not declare, and a request without a token, are
// refused; `levers9 app stop` ends the command box.
func TestBoxDocker(t *testing.T) {
	t.Parallel()
	image := dockertest.Python(t)
	s, c := functionsServer(t, dbtest.SQLiteURL(t), "docker")
	d := newDeployer(t, s, c.Token, "E2E_IMAGE="+image)

	t.Run("app.box", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		b, err := os.ReadFile(filepath.Join(bpDir, "box_app.py"))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "box_app.py"), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		d.deploy(t, dir, "box_app.py")
		r := awaitBox(t, d, "e2e-box", "e2e_box", s.URL+"/box/e2e_box/8000/hello.txt")
		if r.Status != http.StatusOK || string(r.Body) != "hello from the box\n" {
			t.Errorf("GET /box/e2e_box/8000/hello.txt: %s; want 200 and the file", r)
		}
		d.expectStatus(t, http.MethodGet, "/box/e2e_box/8001/", c.Token, nil, http.StatusNotFound)
		if r := d.httpDo(t, http.MethodGet, "/box/e2e_box/8000/hello.txt", "", nil); r.Status != http.StatusUnauthorized &&
			r.Status != http.StatusNotFound {
			t.Errorf("GET /box/e2e_box/8000/hello.txt without a token: %s; want 401 or 404", r)
		}
	})

	t.Run("levers9 box run", func(t *testing.T) {
		t.Parallel()
		// Not 8000: a port is the node's too, and the other box holds
		// 8000 on the one node until its idle window ends.
		out := d.cliOK(t, "", "box", "run", "--name", "e2e-cli-box", "--image", image, "--port", "8002",
			"--", "python3", "-m", "http.server", "8002")
		u := regexp.MustCompile(`https?://\S+/box/\S+`).FindString(out)
		if u == "" || !strings.Contains(u, "/8002") {
			t.Fatalf("levers9 box run printed no URL of port 8002:\n%s", out)
		}
		r := awaitBox(t, d, "e2e-cli-box", "", u)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "Directory listing") {
			t.Errorf("GET %s: %s; want 200 and http.server's listing", u, r)
		}
		d.cliOK(t, "", "app", "stop", "e2e-cli-box")
		// Each try is bounded: a request to a stopped box must not wait for
		// a container that will not come.
		quick := &http.Client{Timeout: 10 * time.Second}
		last := ""
		deadline := time.Now().Add(stopTimeout)
		for {
			req, _ := http.NewRequest(http.MethodGet, u, nil)
			req.Header.Set("Authorization", "Bearer "+c.Token)
			resp, err := quick.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusNotFound {
					break
				}
				last = resp.Status
			} else {
				last = err.Error()
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s after levers9 app stop: %s; want 404 within %v", u, last, stopTimeout)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
}

// awaitBox GETs url with the deployer's token until the answer is not a
// 5xx or 202 (a box's first request may find its container still
// starting) and returns it. Each try is bounded (2 minutes), the whole
// wait too (5 minutes): then the test fails with the box's container log.
func awaitBox(t *testing.T, d *deployer, app, fn, url string) response {
	t.Helper()
	quick := &http.Client{Timeout: 2 * time.Minute}
	deadline := time.Now().Add(5 * time.Minute)
	last := ""
	for start := time.Now(); ; {
		if last != "" {
			t.Logf("GET %s after %v: %s; trying again", url, time.Since(start).Round(time.Millisecond), last)
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := quick.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := response{Status: resp.StatusCode, Header: resp.Header, Body: body}
			if r.Status < 500 && r.Status != http.StatusAccepted {
				return r
			}
			last = r.String()
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			for _, f := range d.deployedApp(t, app).Functions {
				if fn == "" || f.Name == fn {
					d.logFunction(t, f.ID)
					break
				}
			}
			t.Fatalf("GET %s: %s; no answer from the box within 5 minutes", url, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

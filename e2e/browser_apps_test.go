package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"testing"

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
		tb.waitText("#function-hello", "default")
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

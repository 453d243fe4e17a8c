package deployapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/deployapi"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/functions"
)

// TestAnonymousRequestsAreBounded: callers without a token hold at most
// MaxAnonymousRequests requests open to one public deployment; the next
// is refused 429 at once, callers with a token still get through, and a
// place given back is taken again.
func TestAnonymousRequestsAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		fns := w.deploy(t, "boxes",
			functions.FunctionSpec{Name: "open", Kind: function.KindBOX, Ports: []int{8080}, Public: true, SyncTimeoutSeconds: 30})
		w.serve(t, fns["open"].ID, echo("never called"))
		rl := &fakeRelay{hold: make(chan struct{}), entered: make(chan struct{}, 8)}
		api := deployapi.New(deployapi.Config{Functions: w.fn, Auth: auth.NewService(w.tn.DB.Ent, fixture.Log(), nil),
			Relay: rl, Blobs: w.blobs, Log: fixture.Log(), MaxAnonymousRequests: 2})
		mux := http.NewServeMux()
		api.Routes(mux)
		srv := httptest.NewServer(mux)
		defer srv.Close()
		get := func(token string) (int, string) {
			req, _ := http.NewRequest("GET", srv.URL+"/pub/acme/main/box/open/8080/", nil)
			path := "/pub/acme/main/box/open/8080/"
			if token != "" {
				req, _ = http.NewRequest("GET", srv.URL+"/box/open/8080/", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				path = "/box/open/8080/"
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return 0, ""
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}

		held := make(chan int, 2)
		for range 2 {
			go func() { s, _ := get(""); held <- s }()
			<-rl.entered
		}
		if s, body := get(""); s != http.StatusTooManyRequests {
			t.Errorf("a third anonymous request: %d %q, want 429", s, body)
		}
		// A signed-in caller is not counted against the anonymous ones.
		done := make(chan int, 1)
		go func() { s, _ := get(w.token); done <- s }()
		<-rl.entered
		close(rl.hold)
		if s := <-done; s != 200 {
			t.Errorf("a signed-in request beside them: %d", s)
		}
		for range 2 {
			if s := <-held; s != 200 {
				t.Errorf("a held anonymous request ended %d", s)
			}
		}
		// Their places are free again.
		if s, body := get(""); s != 200 {
			t.Errorf("an anonymous request after the others ended: %d %q", s, body)
		}
	})
}

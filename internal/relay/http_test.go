package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
)

// seen is the web service's echo of a request as it received it.
type seen struct {
	Path          string  `json:"path"`
	Host          string  `json:"host"`
	Prefix        string  `json:"prefix"`
	Authorization *string `json:"authorization"`
	Cookie        *string `json:"cookie"`
}

func TestRelayHTTP(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		w := newRelayWorld(t, dburl, worldOptions{})
		// Alice (a member) owns the job; the admin views it.
		j := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
		hostPort := strconv.Itoa(w.hostPorts(t, j.ID, "web")["http"])
		host := strings.TrimPrefix(w.http.URL, "http://")
		cookies := http.Header{"Cookie": {"levers9_session=secret; app=1; levers9_relay_abc=secret2; theme=dark"}, "X-Forwarded-Prefix": {"/evil"}}

		cases := []struct {
			name, token, port, path string
			status                  int
			sandboxed               bool
		}{
			{"the owner, the port by name", w.aliceTok, "http", "/some/path?q=1&x=%2F", http.StatusOK, false},
			{"the owner, by number", w.aliceTok, hostPort, "/a%2Fb?q", http.StatusOK, false},
			{"the root", w.aliceTok, "http", "/", http.StatusOK, false},
			{"the service's own status", w.aliceTok, "http", "/teapot", http.StatusTeapot, false},
			{"a tenant admin viewing a member's job", w.adminTk, "http", "/x", http.StatusOK, true},
			{"another member who sees the job", w.bobTok, "http", "/x", http.StatusOK, true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				prefix := "/relay/" + j.ID + "/web/" + tc.port
				resp, err := w.do(t, http.MethodGet, prefix+tc.path, tc.token, cookies)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != tc.status {
					b, _ := io.ReadAll(resp.Body)
					t.Fatalf("status = %d (%s); want %d", resp.StatusCode, b, tc.status)
				}
				if got := resp.Header.Get("X-Service"); got != "web" {
					t.Errorf("X-Service = %q; want the service's header", got)
				}
				if cc := resp.Header.Get("Cache-Control"); cc != "private, max-age=60" {
					t.Errorf("Cache-Control = %q; want the service's made private", cc)
				}
				if sw := resp.Header.Get("Service-Worker-Allowed"); sw != "" {
					t.Errorf("Service-Worker-Allowed %q reached the dashboard's origin", sw)
				}
				var got seen
				if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
					t.Fatal(err)
				}
				want := seen{Path: tc.path, Host: host, Prefix: prefix}
				if got.Path != want.Path || got.Host != want.Host || got.Prefix != want.Prefix {
					t.Errorf("the service saw path %q host %q prefix %q; want %q %q %q", got.Path, got.Host, got.Prefix, want.Path, want.Host, want.Prefix)
				}
				if got.Authorization != nil {
					t.Errorf("the service saw Authorization %q", *got.Authorization)
				}
				if got.Cookie == nil || *got.Cookie != "app=1; theme=dark" {
					t.Errorf("the service saw Cookie %v; want only app=1; theme=dark", deref(got.Cookie))
				}
				// Only the job's own cookies, scoped to its prefix.
				var set []string
				for _, c := range resp.Cookies() {
					set = append(set, c.Name+" "+c.Path+" "+c.Domain)
				}
				if want := []string{"app " + prefix + "/ ", "scoped " + prefix + "/sub "}; !slices.Equal(set, want) {
					t.Errorf("cookies set through the relay: %q; want %q", set, want)
				}
				csp := resp.Header.Get("Content-Security-Policy")
				if tc.sandboxed != strings.Contains(csp, "sandbox") {
					t.Errorf("Content-Security-Policy = %q; sandboxed: want %v", csp, tc.sandboxed)
				}
			})
		}

		t.Run("the prefix without its slash redirects", func(t *testing.T) {
			t.Parallel()
			resp, err := w.do(t, http.MethodGet, "/relay/"+j.ID+"/web/http?q=1", w.aliceTok, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusPermanentRedirect || loc != "/relay/"+j.ID+"/web/http/?q=1" {
				t.Errorf("status %d, Location %q; want 308 to the prefix with its slash", resp.StatusCode, loc)
			}
		})

		t.Run("a large download arrives whole", func(t *testing.T) {
			t.Parallel()
			const n = 64 << 20
			resp, err := w.do(t, http.MethodGet, fmt.Sprintf("/relay/%s/web/http/big?n=%d", j.ID, n), w.aliceTok, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got, err := checkPattern(resp.Body); err != nil || got != n {
				t.Fatalf("read %d bytes (%v); want %d in the service's pattern", got, err, n)
			}
		})

		t.Run("a slow reader holds up nobody", func(t *testing.T) {
			t.Parallel()
			// The slow one reads a little of a large answer and pauses;
			// the streams share the node's tunnel, so only per-stream
			// flow control lets the fast one through meanwhile.
			slow, err := w.do(t, http.MethodGet, fmt.Sprintf("/relay/%s/web/http/big?n=%d", j.ID, 256<<20), w.aliceTok, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Body.Close()
			if _, err := io.ReadFull(slow.Body, make([]byte, 1024)); err != nil {
				t.Fatal(err)
			}
			const n = 16 << 20
			fast, err := w.do(t, http.MethodGet, fmt.Sprintf("/relay/%s/web/http/big?n=%d", j.ID, n), w.aliceTok, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Body.Close()
			if got, err := checkPattern(fast.Body); err != nil || got != n {
				t.Fatalf("fast: read %d bytes (%v); want %d", got, err, n)
			}
			// The slow one is still open and goes on where it paused.
			b := make([]byte, 1)
			if _, err := io.ReadFull(slow.Body, b); err != nil || b[0] != 1024%251 {
				t.Fatalf("slow: next byte %d, %v; want %d", b[0], err, 1024%251)
			}
		})

		t.Run("websocket", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			u := "ws" + strings.TrimPrefix(w.http.URL, "http") + "/relay/" + j.ID + "/web/http/ws"
			c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceTok}}})
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			for _, sc := range resp.Header.Values("Set-Cookie") {
				if strings.HasPrefix(sc, "levers9") {
					t.Errorf("the upgrade set cookie %q", sc)
				}
			}
			msgs := []struct {
				typ      websocket.MessageType
				in, want string
			}{
				{websocket.MessageText, "hello", "HELLO"},
				{websocket.MessageBinary, "\x00\x01binary\xff", "\x00\x01binary\xff"},
				{websocket.MessageText, strings.Repeat("long ", 30000), strings.Repeat("LONG ", 30000)},
			}
			for _, m := range msgs {
				if err := c.Write(ctx, m.typ, []byte(m.in)); err != nil {
					t.Fatal(err)
				}
				typ, got, err := c.Read(ctx)
				if err != nil || typ != m.typ || string(got) != m.want {
					t.Fatalf("echo of %.20q: %v %.20q, %v; want %v %.20q", m.in, typ, got, err, m.typ, m.want)
				}
			}
			if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	})
}

// checkPattern reads r to its end and checks that byte o is o % 251.
func checkPattern(r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, 1<<20)
	o := 0
	for {
		n, err := br.Read(buf)
		for i, b := range buf[:n] {
			if int(b) != (o+i)%251 {
				return o + i, fmt.Errorf("byte %d is %d, not %d", o+i, b, (o+i)%251)
			}
		}
		o += n
		if err == io.EOF {
			return o, nil
		}
		if err != nil {
			return o, err
		}
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/alexedwards/scs/v2"
)

// An unsafe request passes only from this origin (by Sec-Fetch-Site, or
// by Origin when a browser sends no Sec-Fetch-Site) and with the session's
// token: a cross-origin request is refused even with a valid token.
func TestCSRF(t *testing.T) {
	t.Parallel()
	rt := NewRouter(http.NewServeMux(), &Deps{
		Sessions: scs.New(), Log: slog.New(slog.DiscardHandler), PublicURL: "https://levers9.example",
	})
	srv := httptest.NewServer(rt.load(rt.checkCSRF(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, rt.CSRFToken(r))
	}))))
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	res, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	token := string(b)
	if token == "" {
		t.Fatal("no token")
	}
	tests := []struct {
		name   string
		token  string
		header []string
		want   int
	}{
		{"same origin", token, []string{"Sec-Fetch-Site", "same-origin", "Origin", srv.URL}, http.StatusOK},
		{"typed into the address bar", token, []string{"Sec-Fetch-Site", "none"}, http.StatusOK},
		{"old browser, same host", token, []string{"Origin", srv.URL}, http.StatusOK},
		{"old browser at the public URL", token, []string{"Origin", "https://levers9.example"}, http.StatusOK},
		{"no browser headers (not a browser)", token, nil, http.StatusOK},
		{"cross-site with a valid token", token, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, http.StatusForbidden},
		{"same-site other port with a valid token", token, []string{"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"}, http.StatusForbidden},
		{"old browser, another host, valid token", token, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"same origin without the token", "", []string{"Sec-Fetch-Site", "same-origin"}, http.StatusForbidden},
		{"same origin with a wrong token", token + "x", []string{"Sec-Fetch-Site", "same-origin"}, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, inHeader := range []bool{false, true} {
				form := url.Values{}
				if !inHeader {
					form.Set(CSRFField, tc.token)
				}
				req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(form.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if inHeader {
					req.Header.Set(CSRFHeader, tc.token)
				}
				for i := 0; i+1 < len(tc.header); i += 2 {
					req.Header.Set(tc.header[i], tc.header[i+1])
				}
				res, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != tc.want {
					t.Fatalf("token in header %v: status %d, want %d", inHeader, res.StatusCode, tc.want)
				}
			}
		})
	}
}

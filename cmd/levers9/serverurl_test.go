package main

import (
	"strings"
	"testing"
)

// Server URLs are completed the way people type them, and garbage is
// refused in words, before anything is sent or written.
func TestServerURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://levers9.example.com/", "https://levers9.example.com"},
		{"levers9.example.com", "https://levers9.example.com"},
		{"levers9.example.com:8443/", "https://levers9.example.com:8443"},
		{"gpu.example.com/levers9", "https://gpu.example.com/levers9"},
		{"localhost:8080", "http://localhost:8080"},
		{"localhost", "http://localhost"},
		{"127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"[::1]:8080", "http://[::1]:8080"},
		{"  http://example.com  ", "http://example.com"},
		{"https://localhost:8443", "https://localhost:8443"},
		{"127.0.0.2:8080", "https://127.0.0.2:8080"}, // only the names of this machine are plain HTTP
	} {
		got, err := serverURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("serverURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", "ftp://example.com", "http://", "https://", "://example.com", "two words.com",
		"http://user:pw@example.com", "example.com?x=1", "example.com#top", "example.com:", "http:///path",
	} {
		got, err := serverURL(in)
		if err == nil {
			t.Errorf("serverURL(%q) = %q, want an error", in, got)
		} else if !strings.Contains(err.Error(), "want a URL such as") {
			t.Errorf("serverURL(%q) error %q does not say what is wanted", in, err)
		}
	}
}

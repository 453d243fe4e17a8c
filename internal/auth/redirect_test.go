package auth_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/auth"
)

func TestLocalPath(t *testing.T) {
	t.Parallel()
	cases := []struct{ next, want string }{
		{"/jobs", "/jobs"},
		{"/jobs/j_1?service=main&from=3#end", "/jobs/j_1?service=main&from=3#end"},
		{"/files/b%20x/a%2Fb", "/files/b%20x/a%2Fb"},
		{"/", "/"},
		{"", "/"},
		{"jobs", "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example", "/"}, // the reported attack: browsers drop the tab
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/jobs\\..\\..\\evil", "/"},
		{"/%2F/evil.example", "/"},
		{"/%5C/evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/jobs//x", "/"},
		{"https://evil.example/", "/"},
		{"http:/evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"/\u3000/evil.example", "/"},
		{"/\uff0f/evil.example", "/"},
		{"\t//evil.example", "/"},
		{"/" + strings.Repeat("a", 3000), "/"},
	}
	for _, tc := range cases {
		t.Run(tc.next, func(t *testing.T) {
			t.Parallel()
			if got := auth.LocalPath(tc.next); got != tc.want {
				t.Errorf("LocalPath(%q) = %q, want %q", tc.next, got, tc.want)
			}
		})
	}
}

// FuzzLocalPath: whatever comes in, what goes out is a path with a single
// leading slash that, resolved as a browser resolves a Location against a
// page of this site, stays on this site.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/jobs", "/\t/evil.example", "//evil", "/\\evil", "/%2F%2Fevil", "https://evil/", "/a?b=c#d", "/.//evil"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://host.example/jobs/j_1")
	f.Fuzz(func(t *testing.T, next string) {
		got := auth.LocalPath(next)
		if got != "/" && got != next {
			t.Fatalf("LocalPath(%q) = %q: neither the input nor /", next, got)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") {
			t.Fatalf("LocalPath(%q) = %q: not a single leading slash", next, got)
		}
		// Browsers remove tabs and newlines before parsing and read \ as /.
		browser := strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(got)
		for _, s := range []string{got, browser} {
			ref, err := url.Parse(s)
			if err != nil {
				t.Fatalf("LocalPath(%q) = %q, which does not parse: %v", next, got, err)
			}
			if u := base.ResolveReference(ref); u.Scheme != "https" || u.Host != "host.example" || u.User != nil {
				t.Fatalf("LocalPath(%q) = %q resolves to %s, off host.example", next, got, u)
			}
		}
	})
}

package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// Flags may follow arguments, except after "--", where everything is an
// argument (levers9 logs JOB -f; levers9 x -- -f).
func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		wantFollow bool
		wantN      int
		wantArgs   []string
	}{
		{[]string{"job_1"}, false, 0, []string{"job_1"}},
		{[]string{"job_1", "-f"}, true, 0, []string{"job_1"}},
		{[]string{"-f", "job_1", "-n", "3", "job_2"}, true, 3, []string{"job_1", "job_2"}},
		{[]string{"job_1", "--", "-f", "-n"}, false, 0, []string{"job_1", "-f", "-n"}},
		{[]string{"--", "job_1", "-f"}, false, 0, []string{"job_1", "-f"}},
		{nil, false, 0, []string{}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		follow := fs.Bool("f", false, "")
		n := fs.Int("n", 0, "")
		if err := parseInterspersed(fs, tc.args); err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if *follow != tc.wantFollow || *n != tc.wantN || !slices.Equal(append([]string{}, fs.Args()...), tc.wantArgs) {
			t.Errorf("%q: -f=%v -n=%d args %q; want %v %d %q", tc.args, *follow, *n, fs.Args(), tc.wantFollow, tc.wantN, tc.wantArgs)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := parseInterspersed(fs, []string{"job_1", "--bogus"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}

// Context names and server URLs are checked before anything is written.
func TestContextInputChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"prod", true}, {"127.0.0.1:8080", true}, {"", false}, {"two words", false}, {"tab\tname", false},
		{string(make([]byte, 65)), false},
	} {
		if err := checkContextName(tc.name); (err == nil) != tc.ok {
			t.Errorf("checkContextName(%q) = %v; ok %v", tc.name, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true}, {"https://levers9.example.com/", true},
		{"ftp://example.com", false}, {"127.0.0.1:8080", false}, {"http://", false}, {"", false},
	} {
		if err := checkServerURL(tc.url); (err == nil) != tc.ok {
			t.Errorf("checkServerURL(%q) = %v; ok %v", tc.url, err, tc.ok)
		}
	}
	if h := hint("lv9_abcdefghijkl"); h != "lv9_abcd…" {
		t.Errorf("hint = %q", h)
	}
	if h := hint("short"); h != "*****" {
		t.Errorf("hint of a short token = %q", h)
	}
}

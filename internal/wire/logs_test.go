package wire

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// lineSize never under-counts a line's encoding, which would make
// SplitLogs build a message the protocol refuses, and counts it exactly
// unless a control character is escaped shorter than six bytes.
func TestLineSize(t *testing.T) {
	t.Parallel()
	texts := []string{"", "plain", `"quoted" \\ back`, "<html> & </html>", "tab\there\nnew\rcr\b\f\x00\x1f\x7f",
		"héllo wörld ✓ 日本語 🎉", "\u2028\u2029", "\xff\xfe invalid \xc3", "\ufffd", strings.Repeat("\x01", 100)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		texts = append(texts, string(b))
	}
	times := []time.Time{t0, time.Now(), time.Date(2026, 12, 3, 0, 0, 0, 0, time.FixedZone("x", -7*3600-30*60)), {}}
	for i, text := range texts {
		l := LogLine{Service: "svc-" + text[:min(len(text), 3)], Stream: Stderr, Seq: rng.Uint64() >> rng.IntN(64),
			Time: times[i%len(times)], Text: text}
		b, err := marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		got, want := lineSize(l), len(b)
		exact := !strings.ContainsFunc(l.Service+l.Text, func(r rune) bool { return r < 0x20 })
		if got < want || exact && got != want {
			t.Errorf("lineSize(%q) = %d, encoded %d bytes: %s", text, got, want, b)
		}
	}
	if got := lineSize(LogLine{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); got != MaxMessageBytes {
		t.Errorf("a line whose time cannot be encoded measures %d, want %d", got, MaxMessageBytes)
	}
}

// A refused Logs message names the lines at fault, by index.
func TestLogsValidateNamesLines(t *testing.T) {
	t.Parallel()
	var lines []LogLine
	for i := range 5 {
		lines = append(lines, LogLine{Service: "main", Stream: Stdout, Seq: uint64(i + 1), Time: t0, Text: "x"})
	}
	lines[2].Stream = "bogus"
	lines[3].Seq = 9
	lines[3].Text = "\xff"
	err := Logs{JobID: "job_1", Lines: lines}.Validate()
	ie, ok := err.(*InvalidError)
	if !ok {
		t.Fatalf("got %v, want an *InvalidError", err)
	}
	var got []string
	for _, f := range ie.Fields {
		got = append(got, f.Field)
	}
	if want := []string{"lines[2].stream", "lines[3].seq", "lines[3].text", "lines[4].seq"}; !slices.Equal(got, want) {
		t.Errorf("fields %q, want %q (%v)", got, want, err)
	}
}

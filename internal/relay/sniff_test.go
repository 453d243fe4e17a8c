package relay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

// TestFrameSniffer: the exit code or error passing through is seen
// whatever the chunks the copy hands over.
func TestFrameSniffer(t *testing.T) {
	t.Parallel()
	frames := func(fs ...func(*bytes.Buffer)) []byte {
		var b bytes.Buffer
		for _, f := range fs {
			f(&b)
		}
		return b.Bytes()
	}
	fr := func(typ byte, p []byte) func(*bytes.Buffer) {
		return func(b *bytes.Buffer) { _ = wire.WriteFrame(b, typ, p) }
	}
	long := strings.Repeat("e", 5000)
	cases := []struct {
		name    string
		stream  []byte
		exit    *int // nil: none
		errText string
	}{
		{"output then exit 3", frames(fr(wire.FrameStdout, []byte("hi\n")), fr(wire.FrameStderr, bytes.Repeat([]byte("x"), wire.MaxFramePayload)), fr(wire.FrameExit, wire.ExitPayload(3))), ptr(3), ""},
		{"a negative exit", frames(fr(wire.FrameExit, wire.ExitPayload(-1))), ptr(-1), ""},
		{"an error", frames(fr(wire.FrameStdout, nil), fr(wire.FrameError, []byte("no such file"))), nil, "no such file"},
		{"a long error is clipped", frames(fr(wire.FrameError, []byte(long))), nil, long[:maxSniffedError] + "…"},
		{"cut short", frames(fr(wire.FrameStdout, []byte("abc")))[:5], nil, ""},
		{"not frames", append([]byte{99, 0, 0, 4}, frames(fr(wire.FrameExit, wire.ExitPayload(1)))...), nil, ""},
	}
	for _, tc := range cases {
		for _, chunk := range []int{1, 3, 7, 4096, len(tc.stream) + 1} {
			f := &frameSniffer{}
			for p := tc.stream; len(p) > 0; {
				c := min(chunk, len(p))
				if n, err := f.Write(p[:c]); n != c || err != nil {
					t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
				}
				p = p[c:]
			}
			switch {
			case tc.exit == nil && f.exit != nil:
				t.Errorf("%s (chunks of %d): exit %d; want none", tc.name, chunk, *f.exit)
			case tc.exit != nil && (f.exit == nil || *f.exit != *tc.exit):
				t.Errorf("%s (chunks of %d): exit %v; want %d", tc.name, chunk, f.exit, *tc.exit)
			case f.errText != tc.errText:
				t.Errorf("%s (chunks of %d): error %.30q; want %.30q", tc.name, chunk, f.errText, tc.errText)
			}
		}
	}
}

func ptr(i int) *int { return &i }

package relay

import (
	"io"
	"strings"

	"github.com/levers9/levers9/internal/wire"
)

// maxSniffedError bounds the FrameError text a sniffer keeps.
const maxSniffedError = 1000

// frameSniffer follows the terminal frames (wire.ReadFrame's grammar: a
// type byte, a 3-byte big-endian length, the payload) of the bytes an
// exec's process side sends, and keeps its FrameExit code or FrameError
// text: what the execution's history records. It keeps no other
// payload, so the copy stays a copy.
type frameSniffer struct {
	head    [4]byte
	inHead  int // header bytes seen of the current frame
	left    int // payload bytes still to come of the current frame
	keep    bool
	payload []byte // the current Exit or Error frame's payload so far

	exit     *int
	errText  string
	confused bool // not frames: stop looking
}

// Write feeds p (never fails: the copy's result is the real one).
func (f *frameSniffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !f.confused {
		if f.inHead < len(f.head) {
			c := copy(f.head[f.inHead:], p)
			f.inHead += c
			p = p[c:]
			if f.inHead < len(f.head) {
				break
			}
			f.start()
			continue
		}
		c := min(f.left, len(p))
		if f.keep && len(f.payload) < maxSniffedError+4 {
			f.payload = append(f.payload, p[:min(c, maxSniffedError+4-len(f.payload))]...)
		}
		f.left -= c
		p = p[c:]
		if f.left == 0 {
			f.end()
		}
	}
	return n, nil
}

// start begins the frame whose header is complete.
func (f *frameSniffer) start() {
	typ := f.head[0]
	f.left = int(f.head[1])<<16 | int(f.head[2])<<8 | int(f.head[3])
	if typ < wire.FrameStdin || typ > wire.FrameError || f.left > wire.MaxFramePayload {
		f.confused = true
		return
	}
	f.keep = typ == wire.FrameExit || typ == wire.FrameError
	f.payload = f.payload[:0]
	if f.left == 0 {
		f.end()
	}
}

// end closes the current frame, keeping what it says.
func (f *frameSniffer) end() {
	switch {
	case f.head[0] == wire.FrameExit:
		if code, err := wire.ParseExit(f.payload); err == nil {
			f.exit = &code
		}
	case f.head[0] == wire.FrameError:
		t := string(f.payload)
		if len(t) > maxSniffedError {
			t = strings.ToValidUTF8(t[:maxSniffedError], "") + "…"
		}
		f.errText = t
	}
	f.inHead, f.keep = 0, false
}

// sniffingWriter writes to w and shows what was written to f.
type sniffingWriter struct {
	w io.Writer
	f *frameSniffer
}

func (s sniffingWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	_, _ = s.f.Write(p[:n])
	return n, err
}

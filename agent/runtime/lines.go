package runtime

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// ReadLines calls emit for every line read from r until r ends: without the
// newline (and a CR before it), as valid UTF-8, split into pieces of at most
// max bytes so that one endless line cannot exhaust memory.
func ReadLines(r io.Reader, max int, emit func(string)) {
	ReadLinesNoting(r, max, emit, nil)
}

// chunks are ReadLines' read buffers, reused: every service has two
// streams read to their end, and a fresh read buffer and line buffer of
// max for each were a quarter of the bytes the server allocated running
// trivial jobs.
var chunks = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadLinesNoting is ReadLines that also calls split, when not nil, after
// each line that was emitted in several pieces, with the line's length in
// bytes and the number of pieces: a split must not go unsaid.
func ReadLinesNoting(r io.Reader, max int, emit func(string), split func(size, pieces int)) {
	var buf []byte // grows with the longest line, up to max
	cp := chunks.Get().(*[]byte)
	defer chunks.Put(cp)
	chunk := *cp
	size, pieces := 0, 0
	piece := func(b []byte) {
		size += len(b)
		pieces += emitLine(b, max, emit)
	}
	end := func(b []byte) {
		piece(b)
		if pieces > 1 && split != nil {
			split(size, pieces)
		}
		size, pieces = 0, 0
	}
	for {
		n, err := r.Read(chunk)
		data := chunk[:n]
		for len(data) > 0 {
			// A full buffer is flushed only now: if a newline follows, the
			// line was exactly max long and is not followed by an empty one.
			if len(buf) == max {
				if data[0] == '\n' {
					end(bytes.TrimSuffix(buf, []byte("\r")))
					buf, data = buf[:0], data[1:]
					continue
				}
				cut := runeCut(buf)
				piece(buf[:cut])
				buf = append(buf[:0], buf[cut:]...)
			}
			if i := bytes.IndexByte(data, '\n'); i >= 0 && len(buf)+i <= max {
				buf = append(buf, data[:i]...)
				end(bytes.TrimSuffix(buf, []byte("\r")))
				buf, data = buf[:0], data[i+1:]
				continue
			}
			take := min(len(data), max-len(buf))
			buf, data = append(buf, data[:take]...), data[take:]
		}
		if err != nil {
			if len(buf) > 0 {
				end(buf)
			}
			return
		}
	}
}

// SplitNote is the system line that follows a line of stream emitted in
// pieces (lines of other streams may come between).
func SplitNote(stream Stream, size, pieces, max int) string {
	return fmt.Sprintf("levers9: a %s line of %d bytes was longer than the limit of %d: it is split into %d lines", stream, size, max, pieces)
}

// runeCut is where to cut a full buffer without splitting a UTF-8 sequence
// that the next read may complete.
func runeCut(b []byte) int {
	for back := 1; back < utf8.UTFMax && back <= len(b); back++ {
		i := len(b) - back
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// emitLine replaces invalid UTF-8, which may grow the line, and splits it
// again at rune boundaries.
func emitLine(b []byte, max int, emit func(string)) (pieces int) {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for len(s) > max {
		cut := max
		for !utf8.RuneStart(s[cut]) {
			cut--
		}
		emit(s[:cut])
		s = s[cut:]
		pieces++
	}
	emit(s)
	return pieces + 1
}

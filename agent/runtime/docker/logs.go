package docker

import (
	"bytes"
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// readLogs follows the container's output until it ends and emits every
// line stamped after `after` (a zero time: all of them) with Docker's
// timestamp.
func (s *service) readLogs(ctx context.Context, after time.Time) error {
	if s.job.silent.Load() {
		return nil // nobody listens: a recovered job being discarded
	}
	rc, err := s.job.rt.cli.ContainerLogs(ctx, s.id, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true,
	})
	if err != nil {
		return fmt.Errorf("container logs: %w", err)
	}
	defer rc.Close()
	emitter := func(stream runtime.Stream) *lineWriter {
		return &lineWriter{emit: func(at time.Time, text string) {
			if at.After(after) {
				s.job.emitLog(s.name, stream, at, text)
			}
		}}
	}
	out, errs := emitter(runtime.Stdout), emitter(runtime.Stderr)
	_, err = stdcopy.StdCopy(out, errs, rc)
	out.flush()
	errs.flush()
	return err
}

// lineWriter turns Docker's log messages into lines. StdCopy writes each
// frame with one Write, and Docker sends each log message as one frame:
// "TIMESTAMP MESSAGE", where MESSAGE ends with a newline unless Docker split
// a long line into several messages. A line takes the time of its first
// piece.
type lineWriter struct {
	emit func(at time.Time, text string)
	buf  []byte
	at   time.Time
}

func (w *lineWriter) Write(p []byte) (int, error) {
	msg := p
	at := time.Now()
	if stamp, rest, ok := bytes.Cut(p, []byte(" ")); ok {
		if t, err := time.Parse(time.RFC3339Nano, string(stamp)); err == nil {
			at, msg = t, rest
		}
	}
	for len(msg) > 0 {
		if len(w.buf) == 0 {
			w.at = at
		}
		i := bytes.IndexByte(msg, '\n')
		if i < 0 {
			w.buf = append(w.buf, msg...)
			w.spill(at)
			break
		}
		w.buf = append(w.buf, msg[:i+1]...)
		msg = msg[i+1:]
		w.line(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// line emits b (one line, with or without its newline) as runtime.ReadLines
// does for the process runtime: without the newline, valid UTF-8, split
// into pieces of at most MaxLineBytes.
func (w *lineWriter) line(b []byte) {
	runtime.ReadLines(bytes.NewReader(b), runtime.MaxLineBytes, func(text string) { w.emit(w.at, text) })
}

// spill emits the front of an unfinished line that has grown past the
// longest line, keeping memory bounded; the rest starts a new piece at `at`.
func (w *lineWriter) spill(at time.Time) {
	for len(w.buf) > runtime.MaxLineBytes {
		cut := runtime.MaxLineBytes
		for back := 0; back < utf8.UTFMax && !utf8.RuneStart(w.buf[cut]); back++ {
			cut--
		}
		if cut == runtime.MaxLineBytes-utf8.UTFMax {
			cut = runtime.MaxLineBytes // not UTF-8 anyway
		}
		w.line(w.buf[:cut])
		w.buf = append(w.buf[:0], w.buf[cut:]...)
		w.at = at
	}
}

// flush emits an unfinished last line.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.line(w.buf)
		w.buf = w.buf[:0]
	}
}

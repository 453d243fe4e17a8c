package docker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// output turns a container's log into the service's log events: lines
// stamped after `after` (a zero time: all), with Docker's timestamps.
type output struct {
	s        *service
	after    time.Time
	out, err *lineWriter
	// kept counts the service's lines handed on (system notes left out),
	// for the note that says where a cut log ends.
	kept atomic.Int64
	// waitingSince is when the read now waiting on the daemon began (Unix
	// nanoseconds); 0 while no read waits on it, e.g. while a line waits
	// for room in Events. It tells a stuck log stream from a slow consumer.
	waitingSince atomic.Int64
}

func (s *service) output(after time.Time) *output {
	o := &output{s: s, after: after}
	w := func(stream runtime.Stream) *lineWriter {
		emit := func(stream runtime.Stream, at time.Time, text string) {
			if at.After(after) {
				s.job.emitLog(s.name, stream, at, text)
				if stream != runtime.System {
					o.kept.Add(1)
				}
			}
		}
		return &lineWriter{
			emit: func(at time.Time, text string) { emit(stream, at, text) },
			split: func(at time.Time, size, pieces int) {
				emit(runtime.System, at, runtime.SplitNote(stream, size, pieces, runtime.MaxLineBytes))
			},
		}
	}
	o.out, o.err = w(runtime.Stdout), w(runtime.Stderr)
	return o
}

// follow reads the log as it grows until the container stops.
func (o *output) follow(ctx context.Context) error {
	opts := client.ContainerLogsOptions{Follow: true}
	if !o.after.IsZero() {
		// Resumed: the daemon skips what was sent before (lines at the
		// very instant are filtered again by emit).
		opts.Since = o.after.Format(time.RFC3339Nano)
	}
	return o.read(ctx, opts)
}

// finish reads what the follow missed, then emits unfinished last lines.
// Docker can end a follow when the container stops before delivering the
// output flushed at exit (a last line without a newline), so the log is
// read once more from the last message seen on.
func (o *output) finish(ctx context.Context) error {
	defer o.out.flush()
	defer o.err.flush()
	o.out.skip, o.out.skipN = o.out.last, o.out.atLast
	o.err.skip, o.err.skipN = o.err.last, o.err.atLast
	// Only output flushed at exit can be missed, after everything seen: a
	// stream that showed nothing needs no earlier start than the other.
	var opts client.ContainerLogsOptions
	since := earliest(o.out.last, o.err.last)
	if since.IsZero() {
		since = o.after // nothing seen since a resume
	}
	if !since.IsZero() {
		opts.Since = since.Format(time.RFC3339Nano)
	}
	return o.read(ctx, opts)
}

// lastSeen is the time of the last message read, or now when none was: a
// note stamped so leaves a resumed log's cursor where it was.
func (o *output) lastSeen() time.Time {
	last := o.out.last
	if o.err.last.After(last) {
		last = o.err.last
	}
	if last.IsZero() {
		return time.Now()
	}
	return last
}

// cutNote is the system line that ends a log which could not be read to
// its end (why: err), saying how much of it was kept.
func (o *output) cutNote(err error) string {
	kept := plural(o.kept.Load(), "line", "lines") + " kept"
	if !o.after.IsZero() {
		kept += " since the agent took the job over"
	}
	return fmt.Sprintf("levers9: the log of %s is cut here: Docker did not send the rest of it (%v); %s", o.s.name, err, kept)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// earliest is the earliest of the times that are set (zero when none is).
func earliest(ts ...time.Time) time.Time {
	var e time.Time
	for _, t := range ts {
		if !t.IsZero() && (e.IsZero() || t.Before(e)) {
			e = t
		}
	}
	return e
}

func (o *output) read(ctx context.Context, opts client.ContainerLogsOptions) error {
	if o.s.job.silent.Load() {
		return nil // nobody listens: a recovered job being discarded
	}
	opts.ShowStdout, opts.ShowStderr, opts.Timestamps = true, true, true
	rc, err := o.s.job.rt.cli.ContainerLogs(ctx, o.s.id, opts)
	if err != nil {
		return fmt.Errorf("container logs: %w", err)
	}
	defer rc.Close()
	r := watchedReader{r: rc, o: o}
	o.s.mu.Lock()
	tty := o.s.tty
	o.s.mu.Unlock()
	if tty {
		return o.readTerminal(r)
	}
	if _, err := stdcopy.StdCopy(o.out, o.err, r); err != nil {
		return fmt.Errorf("container logs: %w", err)
	}
	return nil
}

// watchedReader marks in o.waitingSince how long each of its reads has
// waited on the daemon.
type watchedReader struct {
	r io.Reader
	o *output
}

func (w watchedReader) Read(p []byte) (int, error) {
	w.o.waitingSince.Store(time.Now().UnixNano())
	n, err := w.r.Read(p)
	w.o.waitingSince.Store(0)
	return n, err
}

// stuckAfter is how long a read of a stopped container's log may wait on
// the daemon for its next bytes before the stream counts as stuck (the
// daemon keeps it open though it has sent everything). Time spent handing
// lines on does not count: a consumer may be slow for as long as it likes.
const stuckAfter = 10 * time.Second

// await waits for a read of the log to end (done delivers its error) and
// returns that error. The container has stopped, at `stopped`: the read is
// cancelled (cut is true) only when it has waited on the daemon for `stuck`
// without an answer since then; a ctx ended cancels it too.
func (o *output) await(ctx context.Context, stopped time.Time, stuck time.Duration, done <-chan error, cancel context.CancelFunc) (err error, cut bool) {
	t := time.NewTimer(stuck)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err, false
		case <-ctx.Done():
			cancel()
			return <-done, true
		case <-t.C:
			next := stuck
			if ns := o.waitingSince.Load(); ns != 0 {
				since := time.Unix(0, ns)
				if since.Before(stopped) {
					since = stopped // a quiet service's read waited while it ran
				}
				waited := time.Since(since)
				if waited >= stuck {
					cancel()
					return <-done, true
				}
				next = stuck - waited
			}
			t.Reset(next)
		}
	}
}

// readTerminal reads the log of a service on a terminal: Docker does not
// multiplex it (there is only the terminal, which becomes stdout), so the
// messages, "TIMESTAMP TEXT", are told apart by the newline that ends the
// text (the terminal's CRLF: lineWriter drops the CR). Docker records a
// line longer than its buffer (16 KiB) as several messages, the first ones
// without a newline: those run into the next message's timestamp, which
// then shows in the line.
func (o *output) readTerminal(rc io.Reader) error {
	br := bufio.NewReaderSize(rc, 64<<10)
	var stamp []byte // of the message being read, for its continuations
	for {
		msg, err := br.ReadSlice('\n')
		if len(msg) > 0 {
			if stamp != nil {
				// A piece of a message longer than the buffer.
				msg = append(append(stamp, ' '), msg...)
			}
			_, _ = o.out.Write(msg)
			stamp = nil
			if errors.Is(err, bufio.ErrBufferFull) {
				stamp, _, _ = bytes.Cut(msg, []byte(" "))
				stamp = bytes.Clone(stamp)
			}
		}
		switch {
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("container logs: %w", err)
		}
	}
}

// lineWriter turns Docker's log messages into lines. StdCopy writes each
// frame with one Write, and Docker sends each log message as one frame:
// "TIMESTAMP MESSAGE", where MESSAGE ends with a newline unless Docker split
// a long line into several messages. A line takes the time of its first
// piece.
type lineWriter struct {
	emit  func(at time.Time, text string)
	split func(at time.Time, size, pieces int) // after a line emitted in pieces
	buf   []byte
	// size and pieces are of the line being emitted in pieces.
	size, pieces int
	at           time.Time // of the buffered line's first piece
	last         time.Time // of the last message taken
	atLast       int       // messages taken stamped exactly last
	// Messages stamped before skip, and the first skipN stamped at it, were
	// taken already. Docker stamps every piece of a split line alike, so a
	// follow that ended inside a long line leaves pieces at that very time.
	skip  time.Time
	skipN int
}

func (w *lineWriter) Write(p []byte) (int, error) {
	msg := p
	at := time.Now()
	if stamp, rest, ok := bytes.Cut(p, []byte(" ")); ok {
		if t, err := time.Parse(time.RFC3339Nano, string(stamp)); err == nil {
			at, msg = t, rest
		}
	}
	if !w.skip.IsZero() {
		if at.Before(w.skip) {
			return len(p), nil
		}
		if at.Equal(w.skip) && w.skipN > 0 {
			w.skipN--
			return len(p), nil
		}
	}
	switch {
	case at.After(w.last):
		w.last, w.atLast = at, 1
	case at.Equal(w.last):
		w.atLast++
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
		w.line(w.buf, true)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// line emits b (one line, with or without its newline) as runtime.ReadLines
// does for the process runtime: without the newline, valid UTF-8, split
// into pieces of at most MaxLineBytes.
// A line that ends (end) after pieces spilled before it, or that is split
// itself, is followed by a note saying so.
func (w *lineWriter) line(b []byte, end bool) {
	at := w.at
	runtime.ReadLines(bytes.NewReader(b), runtime.MaxLineBytes, func(text string) {
		w.pieces++
		w.emit(at, text)
	})
	w.size += len(bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")))
	if end {
		if w.pieces > 1 && w.split != nil {
			w.split(at, w.size, w.pieces)
		}
		w.size, w.pieces = 0, 0
	}
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
		w.line(w.buf[:cut], false)
		w.buf = append(w.buf[:0], w.buf[cut:]...)
		w.at = at
	}
}

// flush emits an unfinished last line.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.line(w.buf, true)
		w.buf = w.buf[:0]
	}
}

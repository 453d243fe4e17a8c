package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/levers9/levers9/internal/wire"
)

// Ctrl-P Ctrl-Q detaches wherever the chunks of input split it; a Ctrl-P
// not followed by Ctrl-Q is sent, late but in order.
func TestDetachKeysAcrossChunks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		chunks []string
		sent   string
		detach bool
	}{
		{"plain keys", []string{"ls", " -l\r"}, "ls -l\r", false},
		{"in one chunk", []string{"ab\x10\x11cd"}, "ab", true},
		{"split between chunks", []string{"ab\x10", "\x11cd"}, "ab", true},
		{"alone in each chunk", []string{"\x10", "\x11"}, "", true},
		{"Ctrl-P then another key", []string{"a\x10", "b"}, "a\x10b", false},
		{"Ctrl-P twice then Ctrl-Q", []string{"\x10\x10", "\x11"}, "\x10", true},
		{"Ctrl-Q alone", []string{"\x11x"}, "\x11x", false},
		{"Ctrl-P held at the end", []string{"a\x10"}, "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var d detachKeys
			var sent []byte
			detached := false
			for _, c := range tc.chunks {
				out, det := d.scan([]byte(c))
				sent = append(sent, out...)
				if det {
					detached = true
					break
				}
			}
			if string(sent) != tc.sent || detached != tc.detach {
				t.Errorf("sent %q, detached %v; want %q, %v", sent, detached, tc.sent, tc.detach)
			}
		})
	}
}

// frame is one terminal frame as the fake server saw it.
type frame struct {
	typ     byte
	payload string
}

// fakeTerminal is the server's end of a terminal session over net.Pipe:
// it records the frames the client sends and writes frames of its own.
type fakeTerminal struct {
	conn   net.Conn
	frames chan frame // closed when the client's side ends
}

func newFakeTerminal(t *testing.T) (*fakeTerminal, net.Conn) {
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	f := &fakeTerminal{conn: server, frames: make(chan frame, 64)}
	go func() {
		defer close(f.frames)
		for {
			typ, p, err := wire.ReadFrame(server, nil)
			if err != nil {
				return
			}
			f.frames <- frame{typ, string(p)}
		}
	}()
	return f, client
}

func (f *fakeTerminal) send(t *testing.T, typ byte, p []byte) {
	t.Helper()
	if err := wire.WriteFrame(f.conn, typ, p); err != nil {
		t.Errorf("writing frame %d: %v", typ, err)
	}
}

// stall bounds a wait for the client, so that a client that never sends
// what a test waits for fails the test instead of hanging it.
const stall = 10 * time.Second

// next is the client's next frame; ok is false once it closed.
func (f *fakeTerminal) next(t *testing.T) (frame, bool) {
	t.Helper()
	select {
	case fr, ok := <-f.frames:
		return fr, ok
	case <-time.After(stall):
		t.Fatalf("the client sent nothing for %v", stall)
		return frame{}, false
	}
}

// rest is the client's frames until it closed.
func (f *fakeTerminal) rest(t *testing.T) []frame {
	t.Helper()
	var frames []frame
	for {
		fr, ok := f.next(t)
		if !ok {
			return frames
		}
		frames = append(frames, fr)
	}
}

// runSession runs s in the background and returns how it ended.
func runSession(ctx context.Context, s termSession) <-chan sessionResult {
	ch := make(chan sessionResult, 1)
	go func() {
		end, err := s.run(ctx)
		ch <- sessionResult{end, err}
	}()
	return ch
}

type sessionResult struct {
	end termEnd
	err error
}

// syncBuffer is a bytes.Buffer written by the session's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The process's output goes to stdout and stderr, its exit code is the
// session's, and without input the process's stdin is closed at once.
func TestTerminalSessionExitCode(t *testing.T) {
	t.Parallel()
	peer, conn := newFakeTerminal(t)
	var stdout, stderr syncBuffer
	done := runSession(t.Context(), termSession{conn: conn, stdout: &stdout, stderr: &stderr})
	if fr, _ := peer.next(t); fr.typ != wire.FrameCloseStdin {
		t.Fatalf("first frame %+v, want CloseStdin (no input)", fr)
	}
	peer.send(t, wire.FrameStdout, []byte("out\n"))
	peer.send(t, wire.FrameStderr, []byte("err\n"))
	peer.send(t, wire.FrameExit, wire.ExitPayload(7))
	r := <-done
	if r.err != nil || r.end.code != 7 || r.end.detached {
		t.Fatalf("session ended %+v, %v; want code 7", r.end, r.err)
	}
	if stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// Input is sent as Stdin frames and its end as CloseStdin, after which
// the session goes on until the exit code.
func TestTerminalSessionStdinEOFClosesStdin(t *testing.T) {
	t.Parallel()
	peer, conn := newFakeTerminal(t)
	var stdout syncBuffer
	done := runSession(t.Context(), termSession{conn: conn, stdin: strings.NewReader("hello\n"), stdout: &stdout})
	var got []frame
	for len(got) < 2 {
		fr, ok := peer.next(t)
		if !ok {
			t.Fatalf("the client closed after %+v", got)
		}
		got = append(got, fr)
	}
	want := []frame{{wire.FrameStdin, "hello\n"}, {wire.FrameCloseStdin, ""}}
	if !slices.Equal(got, want) {
		t.Fatalf("frames %+v, want %+v", got, want)
	}
	peer.send(t, wire.FrameStdout, []byte("HELLO\n"))
	peer.send(t, wire.FrameExit, wire.ExitPayload(0))
	if r := <-done; r.err != nil || r.end.code != 0 || stdout.String() != "HELLO\n" {
		t.Fatalf("session ended %+v, %v with %q", r.end, r.err, stdout.String())
	}
}

// Window sizes and signals are passed on as they come.
func TestTerminalSessionResizeAndSignal(t *testing.T) {
	t.Parallel()
	peer, conn := newFakeTerminal(t)
	resizes := make(chan termSize, 1)
	signals := make(chan byte, 1)
	done := runSession(t.Context(), termSession{conn: conn, stdout: io.Discard, resizes: resizes, signals: signals})
	resizes <- termSize{rows: 50, cols: 132}
	signals <- 2
	want := map[byte]string{
		wire.FrameCloseStdin: "",
		wire.FrameResize:     string(wire.ResizePayload(50, 132)),
		wire.FrameSignal:     "\x02",
	}
	for range want {
		fr, ok := peer.next(t)
		if !ok {
			t.Fatal("the client closed")
		}
		if p, expected := want[fr.typ]; !expected || p != fr.payload {
			t.Errorf("frame %d %q; want one of %q", fr.typ, fr.payload, want)
		}
	}
	peer.send(t, wire.FrameExit, wire.ExitPayload(130))
	if r := <-done; r.err != nil || r.end.code != 130 {
		t.Fatalf("session ended %+v, %v; want code 130", r.end, r.err)
	}
}

// Ctrl-P Ctrl-Q sends what came before it, then closes the connection:
// the session ends as detached, without an exit code.
func TestTerminalSessionDetach(t *testing.T) {
	t.Parallel()
	peer, conn := newFakeTerminal(t)
	stdin, typing := io.Pipe()
	defer typing.Close()
	done := runSession(t.Context(), termSession{conn: conn, stdin: stdin, stdout: io.Discard, detachKeys: true})
	go func() {
		_, _ = typing.Write([]byte("top\x10"))
		_, _ = typing.Write([]byte("\x11"))
	}()
	got := peer.rest(t)
	if want := []frame{{wire.FrameStdin, "top"}}; !slices.Equal(got, want) {
		t.Errorf("frames %+v, want %+v and the connection closed", got, want)
	}
	if r := <-done; r.err != nil || !r.end.detached {
		t.Fatalf("session ended %+v, %v; want detached", r.end, r.err)
	}
}

// A terminal ended with an error, or a connection lost before the exit
// code, ends the session with an error; so does the end of its context,
// which closes the connection.
func TestTerminalSessionEndsWithoutExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(peer *fakeTerminal, cancel context.CancelFunc)
		want func(error) bool
	}{
		{"error frame", func(p *fakeTerminal, _ context.CancelFunc) {
			_ = wire.WriteFrame(p.conn, wire.FrameError, []byte("the node restarted"))
		}, func(err error) bool { var r remoteError; return errors.As(err, &r) && r == "the node restarted" }},
		{"connection lost", func(p *fakeTerminal, _ context.CancelFunc) { p.conn.Close() },
			func(err error) bool { return errors.Is(err, errConnectionLost) }},
		{"context ended", func(_ *fakeTerminal, cancel context.CancelFunc) { cancel() },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer, conn := newFakeTerminal(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := runSession(ctx, termSession{conn: conn, stdout: io.Discard})
			if fr, _ := peer.next(t); fr.typ != wire.FrameCloseStdin {
				t.Fatalf("first frame %+v", fr)
			}
			tc.end(peer, cancel)
			if r := <-done; !tc.want(r.err) || r.end.detached {
				t.Errorf("session ended %+v, %v", r.end, r.err)
			}
		})
	}
}

// On a terminal, -it puts it in raw mode while the session runs (keys go
// as typed, Ctrl-P Ctrl-Q included), passes its size on at the start and
// on SIGWINCH, and restores it when the session ends.
func TestTerminalCallRawModeResizeRestore(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	defer tty.Close()
	if err := pty.Setsize(ptm, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	canonical := func() bool {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		return tio.Lflag&(unix.ICANON|unix.ECHO) != 0
	}
	if !canonical() {
		t.Fatal("a new terminal is not in canonical mode")
	}
	peer, conn := newFakeTerminal(t)
	var dialed termSize
	call := terminalCall{stdin: tty, stdout: io.Discard, stderr: io.Discard, tty: true, input: true, detachKeys: true}
	done := make(chan sessionResult, 1)
	go func() {
		end, err := call.run(t.Context(), func(_ context.Context, size termSize) (net.Conn, error) {
			dialed = size
			return conn, nil
		})
		done <- sessionResult{end, err}
	}()
	want := func(typ byte, payload string) {
		t.Helper()
		fr, ok := peer.next(t)
		if !ok || fr.typ != typ || fr.payload != payload {
			t.Fatalf("frame %+v (open %v), want type %d %q", fr, ok, typ, payload)
		}
	}
	want(wire.FrameResize, string(wire.ResizePayload(40, 100)))
	if canonical() {
		t.Error("the terminal is not in raw mode during the session")
	}
	if err := pty.Setsize(ptm, &pty.Winsize{Rows: 50, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	want(wire.FrameResize, string(wire.ResizePayload(50, 120)))
	if _, err := ptm.Write([]byte("ls\r\x03\x10\x11")); err != nil {
		t.Fatal(err)
	}
	var typed []byte
	for _, fr := range peer.rest(t) {
		if fr.typ != wire.FrameStdin {
			t.Errorf("frame %+v, want only input", fr)
		}
		typed = append(typed, fr.payload...)
	}
	if string(typed) != "ls\r\x03" {
		t.Errorf("sent %q, want the keys as typed up to the detach keys", typed)
	}
	if r := <-done; r.err != nil || !r.end.detached {
		t.Errorf("session ended %+v, %v; want detached", r.end, r.err)
	}
	if dialed != (termSize{rows: 40, cols: 100}) {
		t.Errorf("dialed with size %+v", dialed)
	}
	if !canonical() {
		t.Error("the terminal was left in raw mode")
	}
}

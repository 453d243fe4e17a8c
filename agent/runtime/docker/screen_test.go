package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/levers9/levers9/agent/runtime"
)

func TestScreenRingKeepsTheLastReplayBytes(t *testing.T) {
	t.Parallel()
	ring := make([]byte, 0, runtime.ReplayBytes)
	var all []byte
	for i, n := range []int{10, runtime.ReplayBytes - 20, 100, runtime.ReplayBytes + 7, 3} {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		ring, all = appendRing(ring, p), append(all, p...)
		want := all[max(0, len(all)-runtime.ReplayBytes):]
		if !bytes.Equal(ring, want) {
			t.Fatalf("after %d writes: ring of %d bytes is not the last %d", i+1, len(ring), len(want))
		}
		if cap(ring) != runtime.ReplayBytes {
			t.Fatalf("ring grew to %d", cap(ring))
		}
	}
}

func TestScreenReplayStartsAtACharacter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ring, want string }{
		{"", ""},
		{"abc", "abc"},
		{"é!"[1:], "!"},                // the tail of a 2-byte character
		{"€x"[1:], "x"},                // of a 3-byte one
		{"\x80\x80\x80\x80y", "\x80y"}, // not UTF-8: at most 3 bytes go
	} {
		if got := string(replay([]byte(tc.ring))); got != tc.want {
			t.Errorf("replay(%q) = %q, want %q", tc.ring, got, tc.want)
		}
	}
}

func TestScreenFeed(t *testing.T) {
	t.Parallel()
	t.Run("output then end", func(t *testing.T) {
		f := newFeed()
		f.write([]byte("one "))
		f.write([]byte("two"))
		f.end(io.EOF)
		if b, err := io.ReadAll(f); string(b) != "one two" || err != nil {
			t.Errorf("read %q, %v", b, err)
		}
		select {
		case <-f.gone:
			t.Error("the end of the output detached the feed")
		default:
		}
	})
	t.Run("detach drops what is unread", func(t *testing.T) {
		f := newFeed()
		f.write([]byte("unread"))
		f.detach(io.EOF)
		f.detach(io.EOF) // twice is fine
		if b, err := io.ReadAll(f); len(b) != 0 || err != nil {
			t.Errorf("read %q, %v after detach", b, err)
		}
		if f.write([]byte("more")) {
			t.Error("a detached feed took output")
		}
	})
	t.Run("a slow reader is detached", func(t *testing.T) {
		f := newFeed()
		chunk := make([]byte, feedLimit/4)
		n := 0
		for f.write(chunk) {
			n++
		}
		if n != 4 {
			t.Errorf("took %d chunks of a quarter of the limit", n)
		}
		<-f.gone
		if _, err := f.Read(make([]byte, 10)); !errors.Is(err, errSlowReader) {
			t.Errorf("Read = %v, want errSlowReader", err)
		}
	})
	t.Run("Read waits for output", func(t *testing.T) {
		f := newFeed()
		got := make(chan string)
		go func() {
			b := make([]byte, 10)
			n, _ := f.Read(b)
			got <- string(b[:n])
		}()
		f.write([]byte("late"))
		if s := <-got; s != "late" {
			t.Errorf("read %q", s)
		}
	})
}

// TestTerminalLogLines: the log of a service on a terminal is not
// multiplexed; its lines end with CRLF, and a line longer than the reader's
// buffer keeps its timestamp.
func TestTerminalLogLines(t *testing.T) {
	t.Parallel()
	rt := &Runtime{ctx: context.Background(), log: slog.New(slog.DiscardHandler)}
	j := newJob(rt, "job-1", 1, 0, 1)
	s := &service{job: j, name: "shell", tty: true}
	o := s.output(time.Time{})
	t1, t2, t3 := "2026-12-01T10:00:00.000000001Z", "2026-12-01T10:00:00.000000002Z", "2026-12-01T10:00:00.000000003Z"
	long := strings.Repeat("a", 70000)
	stream := t1 + " hello\r\n" + t2 + " / # \x1b[6n\r/ # ls\r\n" + t3 + " " + long + "\r\n"
	if err := o.readTerminal(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	o.out.flush()
	close(j.events)
	var texts []string
	var longPieces []string
	for ev := range j.events {
		l := ev.(runtime.LogEvent)
		if l.Stream == runtime.System {
			continue // the note about the split
		}
		if l.Stream != runtime.Stdout {
			t.Errorf("line %q on %s", l.Text, l.Stream)
		}
		if strings.HasPrefix(l.Text, "a") {
			longPieces = append(longPieces, l.Text)
			if want, _ := time.Parse(time.RFC3339Nano, t3); !l.Time.Equal(want) {
				t.Errorf("a piece of the long line at %s, want %s", l.Time, want)
			}
			continue
		}
		texts = append(texts, l.Text)
	}
	// What the last message read was stamped, for the read after the end.
	if want, _ := time.Parse(time.RFC3339Nano, t3); !o.out.last.Equal(want) {
		t.Errorf("last message at %s, want %s", o.out.last, want)
	}
	if want := []string{"hello", "/ # \x1b[6n\r/ # ls"}; strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", texts, want)
	}
	if got := strings.Join(longPieces, ""); got != long {
		t.Errorf("the long line came back as %d pieces of %d bytes in all, holding %q…", len(longPieces), len(got), got[:min(len(got), 40)])
	}
}

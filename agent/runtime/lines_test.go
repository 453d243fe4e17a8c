package runtime

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadLines(t *testing.T) {
	t.Parallel()
	const max = 8
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"lines", "a\nb\n", []string{"a", "b"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"blank lines", "\n\n", []string{"", ""}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"exactly max", "12345678\nx\n", []string{"12345678", "x"}},
		{"max plus one", "123456789\n", []string{"12345678", "9"}},
		{"twice max", "1234567812345678\n", []string{"12345678", "12345678"}},
		{"long without newline", "1234567812", []string{"12345678", "12"}},
		{"rune not split", "1234567é\n", []string{"1234567", "é"}},
		{"invalid utf-8 replaced", "a\xffb\n", []string{"a\uFFFDb"}},
		{"replacement grows past max", "\xff\xff\xff\xff\xff\xff\xff\n", []string{"\uFFFD"}},
		{"replacements split", "\xffa\xffa\xffa\n", []string{"\uFFFDa\uFFFDa", "\uFFFDa"}},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			r := strings.NewReader(tt.in)
			var got []string
			if oneByte {
				ReadLines(iotest.OneByteReader(r), max, func(s string) { got = append(got, s) })
			} else {
				ReadLines(r, max, func(s string) { got = append(got, s) })
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s (one byte at a time: %v): got %q, want %q", tt.name, oneByte, got, tt.want)
			}
			for _, l := range got {
				if len(l) > max {
					t.Errorf("%s: line %q longer than %d", tt.name, l, max)
				}
			}
		}
	}
}

// A line emitted in pieces is followed by a note saying so; others are not.
func TestReadLinesNotesSplits(t *testing.T) {
	t.Parallel()
	const max = 8
	tests := []struct {
		name, in string
		want     []string // lines, with "#size/pieces" for a note
	}{
		{"short lines", "a\nbb\n", []string{"a", "bb"}},
		{"exactly max", "12345678\n", []string{"12345678"}},
		{"split once", "123456789\nx\n", []string{"12345678", "9", "#9/2", "x"}},
		{"split thrice, no newline", "12345678123456781", []string{"12345678", "12345678", "1", "#17/3"}},
		{"crlf long", "123456789\r\n", []string{"12345678", "9", "#9/2"}},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			var got []string
			ReadLinesNoting(r, max, func(s string) { got = append(got, s) }, func(size, pieces int) {
				got = append(got, fmt.Sprintf("#%d/%d", size, pieces))
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s (one byte at a time: %v): got %q, want %q", tt.name, oneByte, got, tt.want)
			}
		}
	}
}

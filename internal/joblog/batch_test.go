package joblog

import (
	"strings"
	"testing"
)

// A batch is what is waiting: never more than the line or byte bound,
// never empty, everything once and in order.
func TestBatches(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 64<<10)
	tests := []struct {
		name     string
		texts    []string
		maxLines int
		want     []int // lines per batch
	}{
		{"one", []string{"a"}, 10, []int{1}},
		{"all waiting", []string{"a", "b", "c", "d", "e"}, 10, []int{5}},
		{"line bound", []string{"a", "b", "c", "d", "e"}, 2, []int{2, 2, 1}},
		// 1 MiB of 64 KiB lines is 16: the 17th starts a new batch.
		{"byte bound", repeat(big, 20), 1000, []int{16, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := make(chan *Line, len(tt.texts))
			for i, s := range tt.texts {
				in <- &Line{Seq: int64(i + 1), Text: s}
			}
			close(in)
			var got []int
			next := int64(1)
			for b := range batches(in, tt.maxLines) {
				got = append(got, len(b))
				for _, l := range b {
					if l.Seq != next {
						t.Fatalf("line %d, want %d", l.Seq, next)
					}
					next++
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("batches %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("batches %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

package buckets_test

import (
	"errors"
	"testing"

	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/fault"
)

func TestPageSize(t *testing.T) {
	t.Parallel()
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name  string
		asked *int
		want  int // 0: refused
	}{
		{"not asked: the default", nil, buckets.DefaultPageSize},
		{"one", n(1), 1},
		{"the most", n(buckets.MaxPageSize), buckets.MaxPageSize},
		{"zero", n(0), 0},
		{"negative", n(-1), 0},
		{"more than the most", n(buckets.MaxPageSize + 1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := buckets.PageSize("first", tc.asked)
			if tc.want != 0 {
				if err != nil || got != tc.want {
					t.Fatalf("PageSize = %d, %v; want %d", got, err, tc.want)
				}
				return
			}
			var f *fault.Error
			if !errors.As(err, &f) || f.Code != fault.BadUserInput || f.Field != "first" {
				t.Fatalf("PageSize = %d, %v; want BAD_USER_INPUT naming first", got, err)
			}
		})
	}
}

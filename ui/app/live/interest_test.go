package live

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// Keys the page shows wake it without a lookup; unseen keys are looked up
// once as the viewer; foreign ones are remembered (bounded) and never
// looked up again.
func TestInterest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var looked [][]string
	viewers := map[string]bool{"n1": true, "n2": true, "n9": true}
	in := NewInterest(func(_ context.Context, ids []string) ([]string, error) {
		looked = append(looked, slices.Clone(ids))
		var out []string
		for _, id := range ids {
			if viewers[id] {
				out = append(out, id)
			}
		}
		return out, nil
	})
	in.Set([]string{"n1", "n2"})
	steps := []struct {
		keys   []string
		want   bool
		lookup []string // the lookup this call makes, nil for none
	}{
		{keys: []string{"n1"}, want: true},
		{keys: []string{"x1", "x2"}, want: false, lookup: []string{"x1", "x2"}},
		{keys: []string{"x1", "x2"}, want: false},                              // remembered as foreign
		{keys: []string{"x1", "n2"}, want: true},                               // the viewer's, no lookup
		{keys: []string{"n9", "x3"}, want: true, lookup: []string{"n9", "x3"}}, // a node that joined since
		{keys: []string{"n9"}, want: true},
		{keys: nil, want: false},
	}
	for i, st := range steps {
		before := len(looked)
		got, err := in.Any(ctx, st.keys)
		if err != nil || got != st.want {
			t.Fatalf("step %d: Any(%v) = %v, %v; want %v", i, st.keys, got, err, st.want)
		}
		var made []string
		if len(looked) > before {
			made = looked[before]
		}
		if !slices.Equal(made, st.lookup) || len(looked) > before+1 {
			t.Fatalf("step %d: looked up %v, want %v", i, looked[before:], st.lookup)
		}
	}
	// Foreign keys are bounded: past maxForeign they are forgotten.
	for i := range maxForeign + 10 {
		if _, err := in.Any(ctx, []string{fmt.Sprintf("f%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(in.foreign) > maxForeign {
		t.Fatalf("%d foreign keys remembered, want at most %d", len(in.foreign), maxForeign)
	}
	// Without a lookup only the keys set are the viewer's.
	jobs := NewInterest(nil)
	jobs.Set([]string{"j1"})
	if got, _ := jobs.Any(ctx, []string{"j2"}); got {
		t.Fatal("an unset key without a lookup counted as the viewer's")
	}
	if got, _ := jobs.Any(ctx, []string{"j2", "j1"}); !got {
		t.Fatal("a set key did not count")
	}
}

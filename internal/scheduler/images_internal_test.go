package scheduler

import (
	"context"
	"testing"

	"github.com/levers9/levers9/internal/scheduling"
)

// No pending job runs a blueprint image, or every one was looked up
// earlier in the pass: loadImages reads nothing (a nil client would panic).
func TestLoadImagesSkipsTheQuery(t *testing.T) {
	t.Parallel()
	st := newState()
	st.jobs = []scheduling.Job{{ID: "j1", Services: []scheduling.Service{{Name: "a", Image: "python:3.12"}, {Name: "b"}}}}
	if err := st.loadImages(context.Background(), nil, "tn_1"); err != nil {
		t.Fatal(err)
	}
	st.imagesRead = map[string]bool{"levers9-bp/tn_1:k": true}
	st.jobs = append(st.jobs, scheduling.Job{ID: "j2", Services: []scheduling.Service{{Name: "a", Image: "levers9-bp/tn_1:k"}}})
	if err := st.loadImages(context.Background(), nil, "tn_1"); err != nil {
		t.Fatal(err)
	}
}

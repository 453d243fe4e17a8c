package docker

import (
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
)

func TestDockerPullProgress(t *testing.T) {
	t.Parallel()
	p := pullProgress{layers: map[string]jsonstream.Progress{}, last: time.Now()}
	dl := func(id string, cur, total int64) jsonstream.Message {
		return jsonstream.Message{ID: id, Status: "Downloading", Progress: &jsonstream.Progress{Current: cur, Total: total}}
	}
	var got []int
	for _, m := range []jsonstream.Message{
		{Status: "Pulling from library/python", ID: "3.12"},
		{ID: "a", Status: "Pulling fs layer"},
		dl("a", 10, 100),  // 10%
		dl("b", 0, 100),   // 5%: too soon, too little
		dl("a", 30, 100),  // 15%
		dl("a", 100, 100), // 50%
		{ID: "a", Status: "Download complete"},
		{ID: "b", Status: "Already exists"}, // b done: 100%
		{ID: "a", Status: "Extracting"},     // not a download
		{ID: "a", Status: "Pull complete"},  // still 100%
		{Status: "Digest: sha256:0123"},     // no layer
	} {
		if pct, ok := p.update(m); ok {
			got = append(got, pct)
		}
	}
	if want := []int{10, 50, 100}; !slices.Equal(got, want) {
		t.Errorf("reported %v, want %v", got, want)
	}
	// A second later, small steps are reported too.
	p.last = time.Now().Add(-2 * time.Second)
	p.layers["c"] = jsonstream.Progress{Total: 200}
	if pct, ok := p.update(dl("c", 20, 200)); !ok || pct != 55 {
		t.Errorf("after a second: %d %v, want 55 true", pct, ok)
	}
}

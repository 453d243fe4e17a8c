package relay_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/relay"
)

// markCall is one Activity.Mark call.
type markCall struct {
	ids []string
	at  time.Time
}

func TestActivityBatches(t *testing.T) {
	t.Parallel()
	clock := fixture.NewClock(fixture.T0)
	calls := make(chan markCall, 16)
	a := &relay.Activity{Now: clock.Now, Every: time.Minute, Mark: func(_ context.Context, ids []string, at time.Time) error {
		slices.Sort(ids)
		calls <- markCall{ids, at}
		return nil
	}}
	next := func(want markCall) {
		t.Helper()
		select {
		case got := <-calls:
			if !slices.Equal(got.ids, want.ids) || !got.at.Equal(want.at) {
				t.Fatalf("Mark(%v, %v); want Mark(%v, %v)", got.ids, got.at, want.ids, want.at)
			}
		case <-time.After(hangBound):
			t.Fatalf("no Mark(%v)", want.ids)
		}
	}
	// The first use is written at once.
	a.Touch("job_a")
	next(markCall{[]string{"job_a"}, fixture.T0})
	// Within the interval job_a is not written again; job_b is new.
	clock.Advance(30 * time.Second)
	a.Touch("job_a")
	a.Touch("job_b")
	next(markCall{[]string{"job_b"}, fixture.T0.Add(30 * time.Second)})
	// Past the interval it is.
	clock.Advance(31 * time.Second)
	a.Touch("job_a")
	next(markCall{[]string{"job_a"}, fixture.T0.Add(61 * time.Second)})

	// Without Mark (or an Activity), touching is a no-op.
	(&relay.Activity{}).Touch("job_a")
	var none *relay.Activity
	none.Touch("job_a")
}

func TestRelayActivity(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		// A short interval: open streams mark their job every 20ms.
		w := newRelayWorld(t, dburl, worldOptions{activityEvery: 20 * time.Millisecond})
		lastActive := func(id string) time.Time {
			j, err := w.db.Ent.Job.Get(w.sys, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.LastActiveAt == nil {
				return time.Time{}
			}
			return *j.LastActiveAt
		}

		t.Run("an HTTP request marks its job", func(t *testing.T) {
			t.Parallel()
			j := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
			if !lastActive(j.ID).IsZero() {
				t.Fatal("the job was active before any use")
			}
			resp, err := w.do(t, http.MethodGet, "/relay/"+j.ID+"/web/http/", w.bobTok, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			waitFor(t, "last_active_at", func() bool { return !lastActive(j.ID).IsZero() })
		})

		streams := []struct {
			name string
			path func(id string) string
		}{
			{"an idle port-forward", func(id string) string { return "/streams/tcp/" + id + "/web/echo" }},
			{"an idle exec", func(id string) string { return execPath(id, "web", "sh", "-c", "read line") }},
		}
		for _, tc := range streams {
			t.Run(tc.name+" keeps its job active", func(t *testing.T) {
				t.Parallel()
				j := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
				ctx, cancel := context.WithTimeout(context.Background(), hangBound)
				defer cancel()
				c, resp, err := w.dialStream(t, ctx, tc.path(j.ID), w.aliceTok)
				if err != nil {
					noTerminals(t, resp)
					t.Fatalf("dial: %v (%v)", err, resp)
				}
				defer c.Close()
				waitFor(t, "the first mark", func() bool { return !lastActive(j.ID).IsZero() })
				first := lastActive(j.ID)
				// No byte flows, yet the marks go on while it is open.
				waitFor(t, "a later mark", func() bool { return lastActive(j.ID).After(first) && w.marksOf(j.ID) >= 3 })
			})
		}
	})
}

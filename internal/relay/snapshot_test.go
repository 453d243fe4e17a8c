package relay_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/relay"
)

// fakeSnapshots records what the relay asks of the blueprints.
type fakeSnapshots struct {
	mu     sync.Mutex
	made   []string          // jobs snapshotted
	failed map[string]string // blueprint → reason
}

func (f *fakeSnapshots) NewSnapshot(_ context.Context, j *ent.Job) (*ent.Blueprint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.made = append(f.made, j.ID)
	id := "bp_" + j.ID
	return &ent.Blueprint{ID: id, Key: strings.Repeat("a", 64), Image: "levers9-bp/" + j.TenantID + ":" + strings.Repeat("a", 64), State: blueprint.StateBUILDING}, nil
}

func (f *fakeSnapshots) Fail(_ context.Context, id, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed[id] = reason
	return nil
}

func (f *fakeSnapshots) Get(_ context.Context, id string) (*ent.Blueprint, error) {
	return &ent.Blueprint{ID: id, State: blueprint.StateBUILDING}, nil
}

func (f *fakeSnapshots) madeOf(id string) (n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.made {
		if m == id {
			n++
		}
	}
	return n
}

// TestRelaySnapshot: the owner or an admin may snapshot a running job's
// service; the process runtime has no containers, so the node refuses
// clearly and the blueprint is FAILED with why. Others learn nothing.
func TestRelaySnapshot(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		snaps := &fakeSnapshots{failed: map[string]string{}}
		w := newRelayWorld(t, dburl, worldOptions{snapshots: func(*relayWorld) relay.Snapshots { return snaps }})
		j := w.run(t, w.alice, jobspec.Job{Interactive: true, Services: []jobspec.Service{webService(t)}})
		path := "/streams/snapshot/" + j.ID + "/web"
		cases := []struct {
			name, path, token string
			hdr               http.Header
			status            int
			code              string
			says              string
			made              bool
		}{
			{"another tenant", path, w.strangerTok, nil, 404, "NOT_FOUND", "", false},
			{"a member not the owner", path, w.bobTok, nil, 403, "FORBIDDEN", "owner", false},
			{"anonymous", path, "", nil, 401, "UNAUTHENTICATED", "", false},
			{"a page of another origin", path, w.aliceTok, http.Header{"Origin": {"http://http-web-" + j.ID + ".relay.test"}}, 403, "FORBIDDEN", "", false},
			{"an unknown service", "/streams/snapshot/" + j.ID + "/db", w.aliceTok, nil, 404, "NOT_FOUND", "", false},
			{"the owner, on the process runtime", path, w.aliceTok, nil, 400, "BAD_USER_INPUT", "container node", true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := snaps.madeOf(j.ID)
				resp, err := w.do(t, http.MethodPost, tc.path, tc.token, tc.hdr)
				if err != nil {
					t.Fatal(err)
				}
				r := readRefusal(t, resp)
				if resp.StatusCode != tc.status || r.Code != tc.code || !strings.Contains(r.Error, tc.says) {
					t.Fatalf("%d %+v; want %d %s saying %q", resp.StatusCode, r, tc.status, tc.code, tc.says)
				}
				if made := snaps.madeOf(j.ID) > before; made != tc.made {
					t.Fatalf("a blueprint recorded: %v; want %v", made, tc.made)
				}
				if tc.made {
					snaps.mu.Lock()
					reason := snaps.failed["bp_"+j.ID]
					snaps.mu.Unlock()
					if !strings.Contains(reason, "container node") {
						t.Errorf("the blueprint failed with %q; want the node's reason", reason)
					}
				}
			})
		}
	})
}

package filesapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/filesapi"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/tunnel"
)

// The files of a node storage are reached through the node's tunnel, as the
// server wires it; while the node is not connected (offline, or online
// but on no tunnel of this server) every operation on its buckets answers
// 503 with code UNAVAILABLE: the request was fine, a part it needs is not
// reachable now.
func TestNodeStorageUnavailable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		s := newSite(t, url, "local")
		everyone := []*ent.Group{s.acme.Group(t, "everyone")}
		for _, n := range []fixture.Node{{Name: "gone", Offline: true}, {Name: "elsewhere"}} {
			nd := s.acme.AddNode(t, fixture.Node{Name: n.Name, Offline: n.Offline, Queues: []string{s.acme.DefaultQueue}})
			st := s.acme.AddStorage(t, fixture.Storage{Name: "disk-" + n.Name, Kind: storage.KindNode, NodeID: nd.ID, Path: "/data"})
			s.acme.AddBucket(t, fixture.Bucket{Name: "on-" + n.Name, StorageID: st.ID, ReadGroups: everyone, WriteGroups: everyone})
		}
		// A tunnel server with no agent connected, as after the node left.
		tun := &tunnel.Server{DB: s.db, Log: fixture.Log()}
		log := fixture.Log()
		api := &filesapi.API{Files: &buckets.Files{Ent: s.db.Ent, Nodes: tun.NodeDriver}, Auth: auth.NewService(s.db.Ent, log, nil), Log: log}
		srv := httptest.NewServer(api.Handler())
		t.Cleanup(srv.Close)
		s.url = srv.URL

		for _, bkt := range []string{"on-gone", "on-elsewhere"} {
			for _, op := range []struct{ method, path string }{
				{"GET", "/files/" + bkt + "/"},
				{"GET", "/files/" + bkt + "/a.txt"},
				{"HEAD", "/files/" + bkt + "/a.txt"},
				{"PUT", "/files/" + bkt + "/a.txt"},
				{"DELETE", "/files/" + bkt + "/a.txt"},
			} {
				code, b := s.do(t, op.method, op.path, s.member, strings.NewReader("x"))
				if code != http.StatusServiceUnavailable {
					t.Errorf("%s %s: %d %s; want 503", op.method, op.path, code, b)
					continue
				}
				if op.method == "HEAD" {
					continue // no body
				}
				var out struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal(b, &out); err != nil || out.Error.Code != "UNAVAILABLE" {
					t.Errorf("%s %s: body %s; want code UNAVAILABLE", op.method, op.path, b)
				}
			}
		}
		// The rest of the tenant's files are served as ever.
		if code, b := s.do(t, "GET", "/files/outputs/", s.member, nil); code != http.StatusOK {
			t.Errorf("a local bucket beside them: %d %s", code, b)
		}
	})
}

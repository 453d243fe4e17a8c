package tunnel_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
)

// TestRevokeClosesStreamTunnel: a revoked credential closes the node's
// stream tunnel too (the signal, not a reconnect, ends it), and a new
// stream tunnel with the old credential is refused.
func TestRevokeClosesStreamTunnel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		rw := newRunnerWorld(t, url)
		st, ys := rw.rawStreams(t)
		ns := &nodes.Service{DB: rw.db, Ent: rw.db.Ent, Bus: rw.bus, Log: rw.log, Now: time.Now}
		// Another node's signal leaves it open.
		if err := rw.bus.Publish(rw.sys, notify.TopicNode, st.NodeID+"-other"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ys.CloseChan():
			t.Fatal("the stream tunnel closed before any revoke")
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := ns.RevokeCredential(rw.admin, st.NodeID); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ys.CloseChan():
		case <-time.After(15 * time.Second):
			t.Fatal("the stream tunnel stayed open after the revoke")
		}
		req, err := http.NewRequest(http.MethodGet, rw.http.URL+"/agent/streams", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+st.Credential)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("a stream tunnel with the revoked credential: %d; want 401", res.StatusCode)
		}
	})
}

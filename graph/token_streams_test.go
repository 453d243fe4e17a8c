package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/internal/dbtest"
)

// createToken makes an API token as the holder of token and returns its
// secret and ID.
func (e *env) createToken(t testing.TB, token, name string, expires *time.Time) (string, string) {
	t.Helper()
	v := vars{"n": name}
	if expires != nil {
		v["x"] = expires.UTC().Format(time.RFC3339Nano)
	}
	r := e.gql(token, `mutation($n: String!, $x: Time) { createAPIToken(name: $n, expiresAt: $x) { token apiToken { id } } }`, v)
	r.ok(t)
	var out struct {
		CreateAPIToken struct {
			Token    string
			APIToken struct{ ID string }
		}
	}
	r.decode(t, &out)
	return out.CreateAPIToken.Token, out.CreateAPIToken.APIToken.ID
}

func (e *env) revokeToken(t testing.TB, token, id string) {
	t.Helper()
	e.gql(token, `mutation($id: ID!) { revokeAPIToken(id: $id) { revokedAt } }`, vars{"id": id}).ok(t)
}

// dialWSHeader opens a WebSocket authenticated by the upgrade request's
// Authorization header (not connection_init).
func (e *env) dialWSHeader(t testing.TB, token string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http"), &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 24)
	c := &wsClient{t: t, conn: conn}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c.send(wsMsg{Type: "connection_init"})
	if m, err := c.next(10 * time.Second); err != nil || m.Type != "connection_ack" {
		t.Fatalf("got %+v %v, want connection_ack", m, err)
	}
	return c
}

// openLogs opens a log subscription of job from line 1 with token over
// transport: "sse", "websocket" (token in connection_init) or
// "websocket-header" (token in the upgrade request).
func (e *env) openLogs(t testing.TB, transport, token, job string) stream {
	t.Helper()
	switch transport {
	case "sse":
		return e.sse(t, token, subLogs, vars{"j": job, "f": 1})
	case "websocket":
		c := e.dialWS(t, token)
		c.subscribe("1", subLogs, vars{"j": job, "f": 1})
		return wsEnd{c}
	case "websocket-header":
		c := e.dialWSHeader(t, token)
		c.subscribe("1", subLogs, vars{"j": job, "f": 1})
		return wsEnd{c}
	}
	t.Fatalf("unknown transport %s", transport)
	return nil
}

// wsEnd is a WebSocket subscription whose closed connection reads as the
// end of the stream (the server closes the connection of an ended token).
type wsEnd struct{ c *wsClient }

func (s wsEnd) event() event {
	s.c.t.Helper()
	m, err := s.c.next(30 * time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		s.c.t.Fatal("the stream neither delivered nor ended in 30 s")
	}
	if err != nil {
		return event{Complete: true}
	}
	switch m.Type {
	case "complete", "error":
		return event{Complete: true}
	case "next":
		return s.c.eventFrom(m)
	}
	s.c.t.Fatalf("unexpected message %s", m.Type)
	return event{}
}

func (c *wsClient) eventFrom(m wsMsg) event {
	c.t.Helper()
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.Unmarshal(m.Payload, &r); err != nil {
		c.t.Fatal(err)
	}
	return event{Data: r.Data, Errors: r.Errors}
}

// expectEnded reads s to its end: it must end, without another line.
func expectEnded(t *testing.T, s stream) {
	t.Helper()
	if ev := s.event(); !ev.Complete {
		t.Fatalf("got %s %+v, want the stream to end", ev.Data, ev.Errors)
	}
	if ss, ok := s.(*sseStream); ok && ss.sc.Err() != nil {
		t.Fatalf("the event stream did not end, the client gave up on it: %v", ss.sc.Err())
	}
	if ws, ok := s.(wsEnd); ok {
		// Not only the subscription: the connection itself is closed.
		if _, err := ws.c.next(30 * time.Second); err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the websocket of an ended token is still open: %v", err)
		}
	}
}

var streamTransports = []string{"sse", "websocket", "websocket-header"}

// Revoking a token ends the subscriptions opened with it, over every
// transport, and only those: another token's stream of the same job goes on.
func TestRevokedTokenEndsStreams(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		e.auth.Bus = e.bus
		a := e.newTenant("revoke")
		for _, transport := range streamTransports {
			t.Run(transport, func(t *testing.T) {
				victim, victimID := e.createToken(t, a.memberToken, "victim-"+transport, nil)
				other, _ := e.createToken(t, a.memberToken, "other-"+transport, nil)
				job := e.submit(a)
				e.appendLines(job, 1, 3)
				v := e.openLogs(t, transport, victim, job)
				o := e.openLogs(t, transport, other, job)
				expectLines(t, v, 1, 3)
				expectLines(t, o, 1, 3)

				e.revokeToken(t, a.memberToken, victimID)
				expectEnded(t, v)

				e.appendLines(job, 4, 5)
				expectLines(t, o, 4, 5)
				e.endJob(job)
				expectComplete(t, o)
			})
		}
	})
}

// A token that expires ends its streams then, without any request.
func TestExpiredTokenEndsStreams(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		e.auth.Bus = e.bus
		a := e.newTenant("expire")
		for _, transport := range []string{"sse", "websocket"} {
			t.Run(transport, func(t *testing.T) {
				expires := time.Now().Add(3 * time.Second)
				short, _ := e.createToken(t, a.memberToken, "short-"+transport, &expires)
				job := e.submit(a)
				e.appendLines(job, 1, 2)
				s := e.openLogs(t, transport, short, job)
				expectLines(t, s, 1, 2)
				expectEnded(t, s)
				if !time.Now().After(expires) {
					t.Fatalf("the stream ended before its token expired")
				}
			})
		}
	})
}

// On PostgreSQL several replicas share the database: a token revoked
// through one ends the streams that another holds (through the bus).
func TestRevokedTokenEndsStreamsOnOtherReplica(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, "postgres")
	one := newEnv(t, url)
	one.auth.Bus = one.bus
	two := newEnv(t, url)
	two.auth.Bus = two.bus
	a := one.newTenant("replicas")
	victim, victimID := one.createToken(t, a.memberToken, "victim", nil)
	job := one.submit(a)
	one.appendLines(job, 1, 2)
	var open []stream
	for _, transport := range streamTransports {
		s := two.openLogs(t, transport, victim, job)
		expectLines(t, s, 1, 2)
		open = append(open, s)
	}
	one.revokeToken(t, a.memberToken, victimID)
	for _, s := range open {
		expectEnded(t, s)
	}
}

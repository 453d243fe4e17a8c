package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsMsg is one graphql-transport-ws message.
type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsClient speaks graphql-transport-ws to the test server.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
}

// dialWS connects and initialises with token (none when empty). It
// returns nil when the server refuses the initialisation.
func (e *env) dialWS(t testing.TB, token string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http"), &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 24)
	c := &wsClient{t: t, conn: conn}
	t.Cleanup(func() { _ = conn.CloseNow() })
	init := wsMsg{Type: "connection_init"}
	if token != "" {
		init.Payload, _ = json.Marshal(map[string]string{"Authorization": "Bearer " + token})
	}
	c.send(init)
	m, err := c.next(10 * time.Second)
	if err != nil {
		return nil
	}
	if m.Type != "connection_ack" {
		t.Fatalf("got %s, want connection_ack", m.Type)
	}
	return c
}

// dialWSClose initialises with token and returns the close code of a
// refused connection (-1 when accepted).
func (e *env) dialWSClose(t testing.TB, token string) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http"), &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	p, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]string{"Authorization": "Bearer " + token}})
	if err := conn.Write(ctx, websocket.MessageText, p); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func (c *wsClient) send(m wsMsg) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *wsClient) subscribe(id, query string, v vars) {
	c.t.Helper()
	p, _ := json.Marshal(map[string]any{"query": query, "variables": v})
	c.send(wsMsg{ID: id, Type: "subscribe", Payload: p})
}

// next returns the next message other than ping and pong, answering pings.
func (c *wsClient) next(timeout time.Duration) (wsMsg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			return wsMsg{}, err
		}
		var m wsMsg
		if err := json.Unmarshal(b, &m); err != nil {
			return wsMsg{}, err
		}
		switch m.Type {
		case "ping":
			_ = c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		case "pong":
		default:
			return m, nil
		}
	}
}

// event is what a subscription delivered: data, errors, or its end.
type event struct {
	Data     json.RawMessage
	Errors   []gqlError
	Complete bool
}

func (c *wsClient) event(timeout time.Duration) event {
	c.t.Helper()
	m, err := c.next(timeout)
	if err != nil {
		c.t.Fatalf("reading the websocket: %v", err)
	}
	switch m.Type {
	case "next":
		var r struct {
			Data   json.RawMessage `json:"data"`
			Errors []gqlError      `json:"errors"`
		}
		if err := json.Unmarshal(m.Payload, &r); err != nil {
			c.t.Fatal(err)
		}
		return event{Data: r.Data, Errors: r.Errors}
	case "error":
		var errs []gqlError
		_ = json.Unmarshal(m.Payload, &errs)
		return event{Errors: errs, Complete: true}
	case "complete":
		return event{Complete: true}
	}
	c.t.Fatalf("unexpected message %s", m.Type)
	return event{}
}

// sseStream is a subscription over server-sent events.
type sseStream struct {
	t    testing.TB
	resp *http.Response
	sc   *bufio.Scanner
}

func (e *env) sse(t testing.TB, token, query string, v vars) *sseStream {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": v})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The timeout only catches hangs.
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	return &sseStream{t: t, resp: resp, sc: sc}
}

// event reads the next event; the end of the body counts as complete.
func (s *sseStream) event() event {
	s.t.Helper()
	var name string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
			if name == "complete" {
				return event{Complete: true}
			}
		case strings.HasPrefix(line, "data: ") && name == "next":
			var r struct {
				Data   json.RawMessage `json:"data"`
				Errors []gqlError      `json:"errors"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil {
				s.t.Fatal(err)
			}
			return event{Data: r.Data, Errors: r.Errors}
		}
	}
	return event{Complete: true}
}

package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/net/http/httpguts"
)

// StreamWindow is the most unread bytes one stream of the stream tunnel
// holds in each direction: a slow reader stops its own sender there and no
// other stream notices. Large enough for full loopback throughput.
const StreamWindow = 4 << 20

// StreamUpgrade is the protocol the stream tunnel's HTTP request upgrades
// to: yamux right on the connection. Not a WebSocket: a WebSocket client
// masks every byte it sends and coder/websocket writes in 4 KiB pieces,
// which cost most of the relay's CPU (BenchmarkStreamTunnel). Proxies
// that pass WebSocket upgrades pass this one the same way.
const StreamUpgrade = "levers9-streams/1"

// YamuxConfig is the stream tunnel's multiplexer configuration, the same
// on both ends (the agent is yamux's client, the server opens the streams).
func YamuxConfig(log *slog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.MaxStreamWindowSize = StreamWindow
	cfg.KeepAliveInterval = 15 * time.Second
	cfg.LogOutput = nil
	cfg.Logger = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	return cfg
}

// DialStreams sends req (GET, with its credentials) upgraded to
// StreamUpgrade and returns the connection once the server switched
// protocols. Ending ctx closes it.
func DialStreams(ctx context.Context, client *http.Client, req *http.Request) (io.ReadWriteCloser, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req = req.WithContext(ctx)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", StreamUpgrade)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, &UpgradeError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("the server switched protocols without a writable connection")
	}
	context.AfterFunc(ctx, func() { _ = rwc.Close() })
	return rwc, nil
}

// UpgradeError is a refused stream tunnel upgrade.
type UpgradeError struct {
	Status int
	Body   string
}

func (e *UpgradeError) Error() string {
	return fmt.Sprintf("the server refused the stream tunnel: %d %.200s", e.Status, e.Body)
}

// AcceptStreams switches r's connection to StreamUpgrade and returns it;
// the caller owns it. An error means nothing was written to w unless the
// request asked for no upgrade (answered 426).
func AcceptStreams(w http.ResponseWriter, r *http.Request) (net.Conn, error) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), StreamUpgrade) || !httpguts.HeaderValuesContainsToken(r.Header.Values("Connection"), "upgrade") {
		w.Header().Set("Upgrade", StreamUpgrade)
		w.Header().Set("Connection", "Upgrade")
		http.Error(w, "upgrade to "+StreamUpgrade, http.StatusUpgradeRequired)
		return nil, errors.New("the request asks for no " + StreamUpgrade + " upgrade")
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("taking over the connection: %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	if _, err := brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + StreamUpgrade + "\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	if err := brw.Flush(); err != nil {
		c.Close()
		return nil, err
	}
	return &bufferedConn{Conn: c, r: brw.Reader}, nil
}

// bufferedConn reads first what the server's reader already buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

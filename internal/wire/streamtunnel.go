package wire

import (
	"log/slog"
	"time"

	"github.com/hashicorp/yamux"
)

// StreamWindow is the most unread bytes one stream of the stream tunnel
// holds in each direction: a slow reader stops its own sender there and no
// other stream notices. Large enough for full loopback throughput.
const StreamWindow = 4 << 20

// StreamReadLimit bounds one WebSocket message of the stream tunnel: a
// yamux frame carries at most a window of data.
const StreamReadLimit = StreamWindow + 64<<10

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

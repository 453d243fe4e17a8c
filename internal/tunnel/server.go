// Package tunnel is the server end of the agent tunnel: nodes join with an
// invite (POST /agent/join) and then keep a WebSocket open (GET /agent)
// over which the server starts and stops their jobs and the agent reports
// states and logs. It is transport only: the node rules (join, presence,
// liveness) are internal/nodes', the job transitions internal/jobs'. Every
// fact goes to the database; a session keeps only what it needs to avoid
// repeating itself, so any replica can hold a node.
package tunnel

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/mounts"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
)

// DefaultHeartbeatInterval is what Welcome asks agents for.
const DefaultHeartbeatInterval = 5 * time.Second

// Server serves agents.
type Server struct {
	DB   *database.DB
	Jobs *jobs.Service
	// Logs stores the output agents ship.
	Logs *joblog.Service
	Bus  *notify.Bus
	Log  *slog.Logger
	Now  func() time.Time
	// HeartbeatInterval is sent to agents in Welcome; default
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// StopGrace is the grace given to services on Stop; default 10s.
	StopGrace time.Duration
	// FenceAfter is sent to agents in Welcome: how long one cut off from
	// the server lets its jobs run before it freezes them, shorter than
	// the node TTL plus grace after which liveness may start them
	// elsewhere (nodes.FenceAfter). 0: agents never freeze them.
	FenceAfter time.Duration
	// Nodes applies the node rules to what agents ask and report: the
	// join exchange, their presence and heartbeats.
	Nodes *nodes.Service
	// Mounts plans how jobs' buckets reach their node; nil: jobs with
	// mounts fail to start.
	Mounts *mounts.Planner
	// Replica is this process's internal URL, recorded on the nodes whose
	// stream tunnel it holds so other replicas forward relay streams to
	// it; empty with one replica.
	Replica string
	// Runners serves function containers' connections, which their
	// agents carry on the stream tunnel; nil: refused.
	Runners *Runners
	// Tracer, when set, records the sending of each job's Start in the
	// job's trace and passes the trace on to the agent; nil: off.
	Tracer trace.Tracer

	reg registry // connected sessions of this process (node storage files)
}

// Routes adds the agent endpoints to mux.
func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /agent/join", s.join)
	mux.HandleFunc("GET /agent", s.connect)
	mux.HandleFunc("GET /agent/streams", s.connectStreams)
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) heartbeatInterval() time.Duration {
	if s.HeartbeatInterval > 0 {
		return s.HeartbeatInterval
	}
	return DefaultHeartbeatInterval
}

func (s *Server) stopGrace() time.Duration {
	if s.StopGrace > 0 {
		return s.StopGrace
	}
	return 10 * time.Second
}

// apiError is the JSON body of every refusal.
type apiError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Code: code, Error: msg})
}

// clip cuts s to n bytes, for texts bounded on the wire or in a column.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

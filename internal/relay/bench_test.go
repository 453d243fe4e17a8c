package relay_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// BenchmarkRelay measures the relay against the same-run baseline of
// reaching the service directly on its host port (loopback), with a real
// agent (process runtime) on the stream tunnel, relay.Handler on an HTTP
// server and an API token: HTTP download throughput and small-request
// latency through /relay/, TCP throughput and one-byte echo through
// /streams/tcp, and a keystroke's echo from `cat` through /streams/exec
// beside a pipe to a local `cat` (and on a terminal, beside a local
// pseudo-terminal). The service is a small Go program
// (testdata/benchservice), so the path to it is what is measured.
func BenchmarkRelay(b *testing.B) {
	w := newRelayBench(b)

	b.Run("HTTPThroughput", func(b *testing.B) {
		const size = 256 << 20
		get := func(c *http.Client, url string) throughput {
			return measure(func() int64 {
				n := w.download(b, c, url+"/bytes?n="+fmt.Sprint(size))
				if n != size {
					b.Fatalf("downloaded %d bytes of %d", n, size)
				}
				return n
			})
		}
		// Alternate, best of two each: the machine is shared.
		var relayed, direct throughput
		for range 2 {
			direct = direct.best(get(w.direct, w.directHTTP))
			relayed = relayed.best(get(w.relayed, w.relayHTTP))
		}
		reportThroughput(b, "HTTP download of 256 MiB through /relay/ (target: ratio >= 0.8)", relayed, direct)
	})

	b.Run("HTTPLatency", func(b *testing.B) {
		const requests = 2000
		round := func(c *http.Client, url string) []time.Duration {
			var d []time.Duration
			for range requests {
				start := time.Now()
				if n := w.download(b, c, url+"/small"); n != 3 {
					b.Fatalf("small answer of %d bytes", n)
				}
				d = append(d, time.Since(start))
			}
			return d
		}
		round(w.relayed, w.relayHTTP) // warm up both connections' paths
		round(w.direct, w.directHTTP)
		relayed, direct := round(w.relayed, w.relayHTTP), round(w.direct, w.directHTTP)
		w.reportLatency(b, "HTTP GET of 3 bytes (kept-alive)", relayed, direct, "target: added p50 < 2 ms")
	})

	b.Run("TCPThroughput", func(b *testing.B) {
		const size = 256 << 20
		recv := func(c net.Conn) throughput {
			defer c.Close()
			return measure(func() int64 {
				if err := binary.Write(c, binary.BigEndian, uint64(size)); err != nil {
					b.Fatal(err)
				}
				n, err := discard(c)
				if err != nil || n != size {
					b.Fatalf("received %d bytes of %d: %v", n, size, err)
				}
				return n
			})
		}
		var relayed, direct throughput
		for range 2 {
			direct = direct.best(recv(w.dialDirect(b)))
			relayed = relayed.best(recv(w.dialRelay(b)))
		}
		reportThroughput(b, "TCP receive of 256 MiB through /streams/tcp", relayed, direct)
	})

	b.Run("TCPEcho", func(b *testing.B) {
		echo := func(c net.Conn) []time.Duration {
			defer c.Close()
			if err := binary.Write(c, binary.BigEndian, uint64(0)); err != nil {
				b.Fatal(err)
			}
			return roundTrips(b, c, c)
		}
		relayed, direct := echo(w.dialRelay(b)), echo(w.dialDirect(b))
		w.reportLatency(b, "one byte echoed over TCP", relayed, direct, "/streams/tcp against the port directly")
	})

	b.Run("ExecEcho", func(b *testing.B) {
		ctx := context.Background()
		ws, _, err := websocket.Dial(ctx, w.wsURL("/streams/exec/"+w.job.ID+"/web?cmd=cat"), w.dialOptions())
		if err != nil {
			b.Skipf("exec through the relay: %v (the process runtime's terminals may not have landed)", err)
		}
		ws.SetReadLimit(4 << 20)
		nc := websocket.NetConn(ctx, ws, websocket.MessageBinary)
		defer nc.Close()
		relayed := roundTrips(b, &frameWriter{nc}, &frameReader{r: nc})

		cat := exec.Command("cat")
		in, err := cat.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cat.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cat.Start(); err != nil {
			b.Fatal(err)
		}
		direct := roundTrips(b, in, out)
		in.Close()
		_ = cat.Wait()
		w.reportLatency(b, "a keystroke echoed by cat", relayed, direct, "/streams/exec against a pipe to a local cat")
	})

	// A keystroke on a terminal, as in a shell: the pseudo-terminal
	// echoes it (cat sees the line only at its end; roundTrips' 2,100
	// keystrokes stay within a terminal line's 4,095).
	b.Run("ExecTTYEcho", func(b *testing.B) {
		ctx := context.Background()
		ws, _, err := websocket.Dial(ctx, w.wsURL("/streams/exec/"+w.job.ID+"/web?cmd=cat&tty=1&rows=24&cols=80"), w.dialOptions())
		if err != nil {
			b.Skipf("exec through the relay: %v (the process runtime's terminals may not have landed)", err)
		}
		ws.SetReadLimit(4 << 20)
		nc := websocket.NetConn(ctx, ws, websocket.MessageBinary)
		defer nc.Close()
		relayed := roundTrips(b, &frameWriter{nc}, &frameReader{r: nc})

		cat := exec.Command("cat")
		tty, err := pty.Start(cat)
		if err != nil {
			b.Fatal(err)
		}
		direct := roundTrips(b, tty, tty)
		_ = cat.Process.Kill()
		_ = cat.Wait()
		tty.Close()
		w.reportLatency(b, "a keystroke echoed by a terminal running cat", relayed, direct, "/streams/exec with tty against a local pseudo-terminal")
	})
}

// roundTrips writes one byte and reads it back, many times, and returns
// each round trip's time (the first ones, warm-up, left out).
func roundTrips(b *testing.B, w io.Writer, r io.Reader) []time.Duration {
	const warm, n = 100, 2000
	var d []time.Duration
	got := make([]byte, 1)
	for i := range warm + n {
		start := time.Now()
		if _, err := w.Write([]byte{'x'}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, got); err != nil || got[0] != 'x' {
			b.Fatalf("echo = %q, %v", got, err)
		}
		if i >= warm {
			d = append(d, time.Since(start))
		}
	}
	return d
}

// frameWriter sends what is written as one stdin frame.
type frameWriter struct{ w io.Writer }

func (f *frameWriter) Write(p []byte) (int, error) {
	if err := wire.WriteFrame(f.w, wire.FrameStdin, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// frameReader reads the payloads of stdout frames.
type frameReader struct {
	r       io.Reader
	pending []byte
	buf     []byte
}

func (f *frameReader) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		typ, payload, err := wire.ReadFrame(f.r, f.buf)
		if err != nil {
			return 0, err
		}
		switch typ {
		case wire.FrameStdout:
			f.pending = append(f.buf[:0], payload...)
		case wire.FrameExit, wire.FrameError:
			return 0, fmt.Errorf("terminal ended: frame %d %q", typ, payload)
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// relayBench is a server with the relay and the stream tunnel, an agent
// running one job whose service "web" serves ports "http" and "tcp".
type relayBench struct {
	url                   string
	token                 string
	job                   *ent.Job
	relayHTTP, directHTTP string
	tcpPort               int
	relayed, direct       *http.Client
}

func newRelayBench(b *testing.B) *relayBench {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	db, err := database.Open(ctx, dbtest.SQLiteURL(b), log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Exclusive(ctx, func() error { return db.Migrate(ctx) }); err != nil {
		b.Fatal(err)
	}
	tn := fixture.NewTenant(b, db, fixture.TenantOptions{Slug: "acme", Name: "Acme"})
	bus := notify.New(db.Pool, log)
	b.Cleanup(bus.Close)
	js := &jobs.Service{DB: db, Log: log, Now: time.Now, Bus: bus,
		Schedule: func(context.Context, *sql.Tx, string) error { return nil }}
	ns := &nodes.Service{DB: db, Ent: db.Ent, Bus: bus, Log: log, Now: time.Now}
	tun := &tunnel.Server{DB: db, Jobs: js, Logs: &joblog.Service{DB: db, Bus: bus, Log: log}, Bus: bus, Log: log,
		Now: time.Now, HeartbeatInterval: time.Second, Nodes: ns}
	mux := http.NewServeMux()
	tun.Routes(mux)
	rh := &relay.Handler{Relay: &relay.Service{Jobs: js, Tunnel: tun, Log: log}, Auth: auth.NewService(db.Ent, log, time.Now)}
	rh.Routes(mux)
	hs := httptest.NewServer(mux)
	b.Cleanup(hs.Close)

	nodeID := startBenchAgent(b, hs.URL, ns, tn.AsAdmin(), db, log)
	bin := buildService(b)
	j, err := js.Submit(tn.AsAdmin(), jobspec.Job{Name: "relay-bench", Queue: tenancy.DefaultQueue, Services: []jobspec.Service{{
		Name: "web", Command: []string{bin}, CPU: 1, MemoryMiB: 256,
		Ports: []jobspec.Port{{Name: "http"}, {Name: "tcp"}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	sys := viewer.SystemContext(ctx)
	if err := db.Ent.Service.Update().Where(service.JobID(j.ID)).SetNodeID(nodeID).Exec(sys); err != nil {
		b.Fatal(err)
	}
	if err := bus.Publish(ctx, notify.TopicNode, nodeID); err != nil {
		b.Fatal(err)
	}
	ports := map[string]int{}
	waitUntil(b, "the service running with its ports", func() bool {
		s, err := db.Ent.Service.Query().Where(service.JobID(j.ID)).Only(sys)
		if err != nil || s.Status != service.StatusRunning || len(s.HostPorts) != 2 {
			return false
		}
		for _, p := range s.HostPorts {
			ports[p.Name] = p.Port
		}
		return true
	})
	w := &relayBench{
		url: hs.URL, token: tn.Token(b, tn.Admin), job: j,
		relayHTTP:  hs.URL + "/relay/" + j.ID + "/web/http",
		directHTTP: fmt.Sprintf("http://127.0.0.1:%d", ports["http"]),
		tcpPort:    ports["tcp"],
	}
	w.relayed = w.client(true)
	w.direct = w.client(false)
	waitUntil(b, "the service to answer through the relay", func() bool {
		resp, err := w.relayed.Get(w.relayHTTP + "/small")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return w
}

// client is an HTTP client keeping connections alive, with the API token
// when relayed.
func (w *relayBench) client(token bool) *http.Client {
	var rt http.RoundTripper = &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
	if token {
		rt = bearer{token: w.token, next: rt}
	}
	return &http.Client{Transport: rt}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// download GETs url and returns how many bytes its answer had.
func (w *relayBench) download(b *testing.B, c *http.Client, url string) int64 {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		b.Fatalf("GET %s: %s %s", url, resp.Status, msg)
	}
	n, err := discard(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func (w *relayBench) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(w.url, "http") + path
}

func (w *relayBench) dialOptions() *websocket.DialOptions {
	return &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + w.token}}}
}

// dialRelay connects to port "tcp" through /streams/tcp.
func (w *relayBench) dialRelay(b *testing.B) net.Conn {
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, w.wsURL("/streams/tcp/"+w.job.ID+"/web/tcp"), w.dialOptions())
	if err != nil {
		b.Fatal(err)
	}
	ws.SetReadLimit(4 << 20)
	return websocket.NetConn(ctx, ws, websocket.MessageBinary)
}

// dialDirect connects to port "tcp" on its host port.
func (w *relayBench) dialDirect(b *testing.B) net.Conn {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", w.tcpPort))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func (w *relayBench) reportLatency(b *testing.B, what string, relayed, direct []time.Duration, note string) {
	rp50, rp99 := percentile(relayed, 50), percentile(relayed, 99)
	dp50, dp99 := percentile(direct, 50), percentile(direct, 99)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(rp50), "relay-p50-ms")
	b.ReportMetric(ms(rp99), "relay-p99-ms")
	b.ReportMetric(ms(dp50), "direct-p50-ms")
	b.ReportMetric(ms(dp99), "direct-p99-ms")
	b.ReportMetric(ms(rp50-dp50), "added-p50-ms")
	b.Logf("%s, %d times: relay p50 %.3f ms p99 %.3f ms; direct p50 %.3f ms p99 %.3f ms; added p50 %.3f ms (%s)",
		what, len(relayed), ms(rp50), ms(rp99), ms(dp50), ms(dp99), ms(rp50-dp50), note)
}

// startBenchAgent joins a node and runs its agent (process runtime) until
// the benchmark ends.
func startBenchAgent(b *testing.B, server string, ns *nodes.Service, admin context.Context, db *database.DB, log *slog.Logger) string {
	code, _, err := ns.CreateInvite(admin, "", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	inv := wire.Inventory{CPUs: 8, MemoryMiB: 16384}
	st, err := agent.Join(context.Background(), agent.JoinConfig{Server: server, Invite: code, Name: "bench", StateDir: dir, Inventory: inv})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := runtime.NewProcess(runtime.ProcessConfig{Root: filepath.Join(dir, "jobs"), StopGrace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx, agent.Config{StateDir: dir, Inventory: inv, Runtime: rt, Log: log}) }()
	b.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("agent.Run: %v", err)
			}
		case <-time.After(time.Minute):
			b.Error("agent did not stop")
		}
	})
	sys := viewer.SystemContext(context.Background())
	waitUntil(b, "node online", func() bool {
		n, err := db.Ent.Node.Get(sys, st.NodeID)
		return err == nil && n.Status == node.StatusOnline
	})
	return st.NodeID
}

// buildService builds testdata/benchservice where a job's own user may
// run it.
func buildService(b *testing.B) string {
	dir, err := os.MkdirTemp("", "relay-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "benchservice")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/benchservice").CombinedOutput()
	if err != nil {
		b.Fatalf("building the service: %v\n%s", err, out)
	}
	return bin
}

// waitUntil polls cond; the bound only catches hangs.
func waitUntil(b *testing.B, what string, cond func() bool) {
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// discard reads r to its end in large reads (io.Discard's 8 KiB would
// make the client the busiest part of the benchmark).
func discard(r io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{r}, make([]byte, 256<<10))
}

// throughput is one transfer's rate, and the CPU time this process (the
// server, the agent and the client; not the service) spent per MB: on a
// machine shared with other work the rate depends on the CPU left over,
// the CPU per byte much less.
type throughput struct{ mbps, cpuPerMB float64 }

func (t throughput) best(u throughput) throughput {
	if u.mbps > t.mbps {
		return u
	}
	return t
}

// measure runs transfer, which returns how many bytes it moved.
func measure(transfer func() int64) throughput {
	cpu0, start := cpuTime(), time.Now()
	n := transfer()
	wall, cpu := time.Since(start), cpuTime()-cpu0
	mb := float64(n) / 1e6
	return throughput{mbps: mb / wall.Seconds(), cpuPerMB: ms(cpu) / mb}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportThroughput(b *testing.B, what string, relayed, direct throughput) {
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(relayed.mbps, "relay-MB/s")
	b.ReportMetric(direct.mbps, "direct-MB/s")
	b.ReportMetric(relayed.mbps/direct.mbps, "ratio")
	b.ReportMetric(relayed.cpuPerMB, "relay-cpu-ms/MB")
	b.ReportMetric(direct.cpuPerMB, "direct-cpu-ms/MB")
	b.Logf("%s: relay %.0f MB/s, direct %.0f MB/s, relay/direct %.2f; CPU of server+agent+client %.2f ms/MB, of the client alone (direct) %.2f ms/MB",
		what, relayed.mbps, direct.mbps, relayed.mbps/direct.mbps, relayed.cpuPerMB, direct.cpuPerMB)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

package wire

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
)

// BenchmarkStreamTunnel sends 256 MiB down one yamux stream, the agent's
// way (the agent is yamux's client and writes 128 KiB at a time), over a
// connection upgraded as the stream tunnel's (wire.StreamUpgrade), beside
// the same over a plain loopback TCP connection: the CPU per MB the
// tunnel itself costs.
func BenchmarkStreamTunnel(b *testing.B) {
	b.Run("TCP", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				b.Error(err)
			}
			accepted <- c
		}()
		agent, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		tunnelThroughput(b, agent, <-accepted)
	})
	b.Run("Upgrade", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		accepted := make(chan net.Conn, 1)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := AcceptStreams(w, r)
			if err != nil {
				b.Error(err)
				return
			}
			accepted <- c
		}))
		defer hs.Close()
		req, _ := http.NewRequest(http.MethodGet, hs.URL, nil)
		agent, err := DialStreams(ctx, nil, req)
		if err != nil {
			b.Fatal(err)
		}
		defer agent.Close()
		tunnelThroughput(b, agent, <-accepted)
	})
}

// tunnelThroughput runs yamux on agent (client) and server, opens a stream
// from the server, and times the agent sending 256 MiB down it.
func tunnelThroughput(b *testing.B, agent io.ReadWriteCloser, server net.Conn) {
	const size = 256 << 20
	log := slog.New(slog.DiscardHandler)
	ya, err := yamux.Client(agent, YamuxConfig(log))
	if err != nil {
		b.Fatal(err)
	}
	defer ya.Close()
	ys, err := yamux.Server(server, YamuxConfig(log))
	if err != nil {
		b.Fatal(err)
	}
	defer ys.Close()
	go func() {
		st, err := ya.AcceptStream()
		if err != nil {
			b.Error(err)
			return
		}
		defer st.Close()
		chunk := make([]byte, 128<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := st.Write(chunk); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	st, err := ys.OpenStream()
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Write([]byte{0}); err != nil { // the agent accepts on the first frame
		b.Fatal(err)
	}
	cpu0, start := cpuTime(), time.Now()
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{st}, make([]byte, 256<<10))
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if err != nil || n != size {
		b.Fatalf("received %d bytes of %d: %v", n, size, err)
	}
	mb := float64(n) / 1e6
	cpuPerMB := float64(cpu) / float64(time.Millisecond) / mb
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(mb/wall.Seconds(), "MB/s")
	b.ReportMetric(cpuPerMB, "cpu-ms/MB")
	b.Logf("256 MiB down one stream: %.0f MB/s, %.2f ms of CPU per MB (both ends)", mb/wall.Seconds(), cpuPerMB)
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

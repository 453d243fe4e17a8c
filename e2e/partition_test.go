package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
)

// frozenProxy forwards TCP connections to target until frozen: then it
// passes nothing either way and holds new connections, as a network that
// drops a node's packets, until thawed.
type frozenProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	thawed chan struct{} // closed while not frozen
}

func newFrozenProxy(t *testing.T, target string) *frozenProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &frozenProxy{ln: ln, target: target, thawed: make(chan struct{})}
	close(p.thawed)
	t.Cleanup(func() { _ = ln.Close(); p.thaw() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *frozenProxy) URL() string { return "http://" + p.ln.Addr().String() }

// gate waits while the proxy is frozen.
func (p *frozenProxy) gate() {
	p.mu.Lock()
	ch := p.thawed
	p.mu.Unlock()
	<-ch
}

func (p *frozenProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default:
	}
}

func (p *frozenProxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

func (p *frozenProxy) serve(c net.Conn) {
	defer c.Close()
	p.gate()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.gate()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					return
				}
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				return
			}
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
}

// progressOf reads the counters the attempts of a job write, one file per
// process: file name → last number written.
func progressOf(dir string) map[string]int {
	out := map[string]int{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "p.") {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fields := strings.Fields(string(b))
		if len(fields) > 0 {
			n, _ := strconv.Atoi(fields[len(fields)-1])
			out[e.Name()] = n
		}
	}
	return out
}

// A node cut off from the server by the network, past its TTL and grace,
// with a job that may be retried and another node in the queue: the job's
// second attempt starts on the other node, and the first, on the cut-off
// agent, stops making progress before it does (the agent froze it), so
// that one job never runs twice at once (issue 42). Sampled every 100 ms
// from before the cut to after the node is back, never do two attempts
// advance together. Back in touch, the agent kills the unwanted first
// attempt, which stays still.
func TestPartitionNeverRunsTwoAttempts(t *testing.T) {
	t.Parallel()
	const ttl, grace = 3 * time.Second, 6 * time.Second
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t),
		"LEVERS9_LOCAL_NODE=false", "LEVERS9_NODE_TTL="+ttl.String(), "LEVERS9_NODE_GRACE="+grace.String())
	c := s.credentials()
	grant(t, s.URL, c.Token)

	// Node A reaches the server only through the proxy.
	proxy := newFrozenProxy(t, strings.TrimPrefix(s.URL, "http://"))
	var inv struct{ CreateNodeInvite struct{ Code string } }
	gql(t, s.URL, c.Token, `mutation($n: String!) { createNodeInvite(nodeName: $n) { code } }`, map[string]any{"n": "cut-node"}, &inv)
	startAgent(t, "agent", "join", "--server", proxy.URL(), "--invite", inv.CreateNodeInvite.Code,
		"--state-dir", filepath.Join(t.TempDir(), "agent"), "--cpus", "4", "--memory", "8GiB", "--runtime", "process")
	poll(t, "node A online", func() bool {
		n := nodeByName(t, s.URL, c.Token, "cut-node")
		return n != nil && n.Status == "ONLINE"
	})

	// Each attempt counts in a file of its own, where any job user may
	// write.
	dir, err := os.MkdirTemp("", "levers9-partition-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`f=%s/p.$$.$(date +%%s%%N); i=0; while true; do i=$((i+1)); echo $i >> $f; echo line $i; sleep 0.05; done`, dir)
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation($c: [String!]!) { submitJob(spec: {name: "partitioned", queue: "default", retries: 1,
		services: [{name: "main", command: $c, cpu: 1, memoryMiB: 64}]}) { id } }`,
		map[string]any{"c": []string{"sh", "-c", script}}, &sub)
	id := sub.SubmitJob.ID
	poll(t, "attempt 1 counting", func() bool {
		for _, n := range progressOf(dir) {
			if n > 5 {
				return true
			}
		}
		return false
	})
	// Node B, reached directly, where attempt 2 will run.
	joinAgent(t, s, c.Token, "other-node", "--runtime", "process")

	var (
		mu         sync.Mutex
		prev       = progressOf(dir)
		violations []string
		samples    int
	)
	sample := func() {
		now := progressOf(dir)
		var moved []string
		for f, n := range now {
			if n > prev[f] { // a process that appeared counts as moving
				moved = append(moved, fmt.Sprintf("%s %d→%d", f, prev[f], n))
			}
		}
		mu.Lock()
		samples++
		if len(moved) > 1 {
			violations = append(violations, strings.Join(moved, ", "))
		}
		mu.Unlock()
		prev = now
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	stopSampling := func() {
		select {
		case <-stop:
		default:
			close(stop)
			<-sampled
		}
	}
	t.Cleanup(stopSampling)

	proxy.freeze()
	var job struct{ Node struct{ Attempt int } }
	poll(t, "the job requeued as attempt 2", func() bool {
		gql(t, s.URL, c.Token, `query($id: ID!) { node(id: $id) { ... on Job { attempt } } }`, map[string]any{"id": id}, &job)
		return job.Node.Attempt == 2
	})
	poll(t, "attempt 2 counting", func() bool {
		p := progressOf(dir)
		if len(p) < 2 {
			return false
		}
		for _, n := range p {
			if n > 20 {
				return len(p) >= 2
			}
		}
		return false
	})
	// Attempt 2 counts on; attempt 1 stays still, for the rest of the
	// partition and after it.
	time.Sleep(2 * time.Second)
	proxy.thaw()
	poll(t, "node A back online", func() bool {
		n := nodeByName(t, s.URL, c.Token, "cut-node")
		return n != nil && n.Status == "ONLINE"
	})
	time.Sleep(3 * time.Second) // the agent reconciles: attempt 1 is killed, not thawed
	stopSampling()

	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("two attempts advanced together in %d of %d samples, first: %s", len(violations), samples, violations[0])
	}
	files := progressOf(dir)
	if len(files) != 2 {
		t.Fatalf("%d counting processes, want 2 (one per attempt): %v", len(files), files)
	}
	if j := jobByID(t, s.URL, c.Token, id); j.Status != "RUNNING" {
		t.Fatalf("job = %+v; want attempt 2 RUNNING", j)
	}
	// Attempt 1's output up to its freeze, kept by its agent while cut off,
	// is stored with attempt 1 once the agent is back: every line, in
	// order (the last count may have been written without its line).
	first := ""
	for name := range files {
		if first == "" || stamp(name) < stamp(first) {
			first = name
		}
	}
	var got []string
	poll(t, "attempt 1's output stored", func() bool {
		got = got[:0]
		for {
			var out struct{ JobLogs []struct{ Text string } }
			gql(t, s.URL, c.Token, `query($id: ID!, $from: Int!) { jobLogs(jobId: $id, attempt: 1, fromSeq: $from) { text } }`,
				map[string]any{"id": id, "from": len(got) + 1}, &out)
			if len(out.JobLogs) == 0 {
				break
			}
			for _, l := range out.JobLogs {
				got = append(got, l.Text)
			}
		}
		return len(got) >= files[first]-1
	})
	for i, text := range got {
		if text != fmt.Sprintf("line %d", i+1) {
			t.Fatalf("attempt 1's line %d is %q; want line %d", i+1, text, i+1)
		}
	}
	t.Logf("%d samples, counts %v, %d lines of attempt 1 stored", samples, files, len(got))
}

// stamp is the start time in a counter file's name (p.PID.NANOSECONDS).
func stamp(name string) string {
	parts := strings.Split(name, ".")
	return fmt.Sprintf("%020s", parts[len(parts)-1])
}

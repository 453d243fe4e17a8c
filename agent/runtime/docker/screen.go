package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// screen is the terminal of a TTY service, held by the runtime: one attach
// to the container, opened before it starts (after an agent restart, on the
// first Attach), that reads everything the service writes, keeps the last
// runtime.ReplayBytes for replay, hands it on to every attached Terminal
// and carries their input. Docker's log cannot supply the replay: it
// records a line only once it ends, so a prompt would be missing.
type screen struct {
	s    *service
	conn client.HijackedResponse
	wmu  sync.Mutex // one write to the terminal at a time

	mu   sync.Mutex
	ring []byte // the last output, at most ReplayBytes
	subs map[*feed]struct{}
	done chan struct{} // the output ended; code and err are set
	code int
	err  error
}

// openScreen returns the service's screen, attaching to container id on
// first use. ran: the container ran already, so the replay starts with the
// end of its log (a restarted agent).
func (s *service) openScreen(ctx context.Context, id string, ran bool) (*screen, error) {
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	if s.screen != nil {
		return s.screen, nil
	}
	sc := &screen{s: s, ring: make([]byte, 0, runtime.ReplayBytes), subs: map[*feed]struct{}{}, done: make(chan struct{})}
	cli := s.job.rt.cli
	if ran {
		// Before the attach: what is printed in between is missed rather
		// than shown twice.
		if err := sc.seed(ctx, id); err != nil {
			return nil, err
		}
	}
	res, err := cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attaching to the terminal of %s: %w", s.name, err)
	}
	sc.conn = res.HijackedResponse
	s.screen = sc
	go sc.run(id)
	return sc, nil
}

// closeScreen ends the screen of a service that did not start.
func (s *service) closeScreen() {
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	if s.screen != nil {
		s.screen.conn.Close()
	}
}

// seedLines is how many lines of the log a restarted agent reads for the
// replay; the ring keeps only the last ReplayBytes of them.
const seedLines = "1000"

func (sc *screen) seed(ctx context.Context, id string) error {
	rc, err := sc.s.job.rt.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: seedLines})
	if err != nil {
		return fmt.Errorf("reading the terminal of %s: %w", sc.s.name, err)
	}
	defer rc.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf) // with a TTY the log is not multiplexed
		sc.ring = appendRing(sc.ring, buf[:n])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the terminal of %s: %w", sc.s.name, err)
		}
	}
}

// run reads the terminal until the container stops (or the runtime is
// closed), then records the exit code and ends every attached Terminal's
// output.
func (sc *screen) run(id string) {
	rt := sc.s.job.rt
	stop := context.AfterFunc(rt.ctx, sc.conn.Close)
	defer stop()
	buf := make([]byte, 32<<10)
	for {
		n, err := sc.conn.Reader.Read(buf)
		if n > 0 {
			sc.output(buf[:n])
		}
		if err != nil {
			break
		}
	}
	sc.conn.Close()
	code, err := sc.exitCode(id)
	sc.mu.Lock()
	sc.code, sc.err = code, err
	subs := sc.subs
	sc.subs = nil
	sc.mu.Unlock()
	close(sc.done)
	for f := range subs {
		f.end(io.EOF)
	}
}

func (sc *screen) exitCode(id string) (int, error) {
	ctx := sc.s.job.rt.ctx
	if ctx.Err() != nil {
		return 0, errors.New("the docker runtime closed; the service keeps running")
	}
	wait := sc.s.job.rt.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-wait.Result:
		return int(res.StatusCode), nil
	case err := <-wait.Error:
		return 0, fmt.Errorf("waiting for service %s: %w", sc.s.name, err)
	}
}

func (sc *screen) output(p []byte) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.ring = appendRing(sc.ring, p)
	for f := range sc.subs {
		if !f.write(p) {
			delete(sc.subs, f)
			sc.s.job.log.Warn("a terminal reads too slowly; detaching it", "service", sc.s.name)
		}
	}
}

// subscribe returns a new feed of the terminal's output that starts with
// the replay; false once the output ended.
func (sc *screen) subscribe() (*feed, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.subs == nil {
		return nil, false
	}
	f := newFeed()
	f.write(replay(sc.ring))
	sc.subs[f] = struct{}{}
	return f, true
}

func (sc *screen) unsubscribe(f *feed) {
	sc.mu.Lock()
	delete(sc.subs, f)
	sc.mu.Unlock()
	f.detach(io.EOF)
}

func (sc *screen) write(p []byte) (int, error) {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	return sc.conn.Conn.Write(p)
}

// appendRing appends p to ring, dropping the front beyond ReplayBytes
// (ring's capacity is ReplayBytes: it never grows).
func appendRing(ring, p []byte) []byte {
	if len(p) >= runtime.ReplayBytes {
		return append(ring[:0], p[len(p)-runtime.ReplayBytes:]...)
	}
	if over := len(ring) + len(p) - runtime.ReplayBytes; over > 0 {
		ring = ring[:copy(ring, ring[over:])]
	}
	return append(ring, p...)
}

// replay is a copy of ring without a character cut at its front.
func replay(ring []byte) []byte {
	for i := 1; i < utf8.UTFMax && len(ring) > 0 && !utf8.RuneStart(ring[0]); i++ {
		ring = ring[1:]
	}
	return append([]byte(nil), ring...)
}

// feedLimit is how much output an attached Terminal may fall behind before
// it is detached: the screen never waits for a reader, as a blocked attach
// would block the service's own writes.
const feedLimit = 1 << 20

var errSlowReader = errors.New("detached: the terminal read its output too slowly")

// feed is one attached Terminal's output: written by the screen without
// ever blocking, read by the Terminal.
type feed struct {
	mu   sync.Mutex
	cond sync.Cond
	buf  []byte
	err  error         // after buf: io.EOF or why not
	gone chan struct{} // closed when detached
}

func newFeed() *feed {
	f := &feed{gone: make(chan struct{})}
	f.cond.L = &f.mu
	return f
}

// write appends p, or detaches the feed when its reader is too far behind.
func (f *feed) write(p []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false
	}
	if len(f.buf)+len(p) > feedLimit {
		f.detachLocked(errSlowReader)
		return false
	}
	f.buf = append(f.buf, p...)
	f.cond.Broadcast()
	return true
}

// end: no more output; what is buffered is still read.
func (f *feed) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
		f.cond.Broadcast()
	}
}

// detach ends the feed for its Terminal's own reasons (Close, too slow).
func (f *feed) detach(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detachLocked(err)
}

func (f *feed) detachLocked(err error) {
	select {
	case <-f.gone:
		return
	default:
	}
	close(f.gone)
	if f.err == nil {
		f.err = err
	}
	f.buf = nil // a detached Terminal reads nothing more
	f.cond.Broadcast()
}

func (f *feed) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.buf) == 0 && f.err == nil {
		f.cond.Wait()
	}
	if len(f.buf) > 0 {
		n := copy(p, f.buf)
		f.buf = f.buf[n:]
		if len(f.buf) == 0 {
			f.buf = nil
		}
		return n, nil
	}
	return 0, f.err
}

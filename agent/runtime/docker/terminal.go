package docker

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

var _ runtime.Terminals = (*job)(nil)

// terminalCallTimeout bounds a resize or a signal.
const terminalCallTimeout = 10 * time.Second

// runningService is the service called name with its container ID and
// whether it has a terminal, if it runs.
func (j *job) runningService(name string) (*service, string, bool, error) {
	for _, s := range j.services {
		if s.name != name {
			continue
		}
		s.mu.Lock()
		id, running, tty := s.id, s.running, s.tty
		s.mu.Unlock()
		if running && id != "" {
			return s, id, tty, nil
		}
	}
	return nil, "", false, fmt.Errorf("service %s: %w", name, runtime.ErrNoService)
}

// Attach implements runtime.Terminals: it joins the service's screen.
func (j *job) Attach(ctx context.Context, name string, size runtime.Size) (runtime.Terminal, error) {
	s, id, tty, err := j.runningService(name)
	if err != nil {
		return nil, err
	}
	if !tty {
		return nil, fmt.Errorf("attach to service %s: %w", name, runtime.ErrNoTTY)
	}
	// Normally open since before the start; a restarted agent opens it now.
	sc, err := s.openScreen(ctx, id, true)
	if err != nil {
		return nil, err
	}
	f, ok := sc.subscribe()
	if !ok {
		return nil, fmt.Errorf("service %s: %w", name, runtime.ErrNoService) // it just ended
	}
	t := &attachTerm{sc: sc, id: id, f: f}
	if err := t.Resize(size); err != nil {
		_ = t.Close()
		return nil, err
	}
	return t, nil
}

// attachTerm is one attach to a screen.
type attachTerm struct {
	sc *screen
	id string
	f  *feed
}

func (t *attachTerm) Stdin() io.WriteCloser { return attachInput{t} }
func (t *attachTerm) Stdout() io.Reader     { return t.f }
func (t *attachTerm) Stderr() io.Reader     { return nil }

type attachInput struct{ t *attachTerm }

func (in attachInput) Write(p []byte) (int, error) {
	select {
	case <-in.t.f.gone:
		return 0, runtime.ErrDetached
	default:
	}
	return in.t.sc.write(p)
}

// Close does nothing: on a terminal, end of input is Ctrl-D.
func (attachInput) Close() error { return nil }

// Resize sets the container's terminal size; a zero size is left alone.
func (t *attachTerm) Resize(size runtime.Size) error {
	if size.Rows == 0 || size.Cols == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(t.sc.s.job.rt.ctx, terminalCallTimeout)
	defer cancel()
	_, err := t.sc.s.job.rt.cli.ContainerResize(ctx, t.id, client.ContainerResizeOptions{Height: uint(size.Rows), Width: uint(size.Cols)})
	if err != nil {
		return fmt.Errorf("resizing the terminal of %s: %w", t.sc.s.name, err)
	}
	return nil
}

// Signal sends sig to the service's main process (through the container's
// init, which passes it on).
func (t *attachTerm) Signal(sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(t.sc.s.job.rt.ctx, terminalCallTimeout)
	defer cancel()
	_, err := t.sc.s.job.rt.cli.ContainerKill(ctx, t.id, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))})
	if err != nil {
		return fmt.Errorf("signalling service %s: %w", t.sc.s.name, err)
	}
	return nil
}

// Wait returns the service's exit code once it ended, or ErrDetached.
func (t *attachTerm) Wait(ctx context.Context) (int, error) {
	select {
	case <-t.f.gone:
		return 0, runtime.ErrDetached
	default:
	}
	select {
	case <-t.f.gone:
		return 0, runtime.ErrDetached
	case <-t.sc.done:
		return t.sc.code, t.sc.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Close detaches; the service keeps running.
func (t *attachTerm) Close() error {
	t.sc.unsubscribe(t.f)
	return nil
}

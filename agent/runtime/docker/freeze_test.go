package docker

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// counted collects a job's events in the background and knows the
// highest number its service printed.
type counted struct {
	mu    sync.Mutex
	last  int
	evs   []runtime.Event
	ended chan struct{}
}

func countLines(j runtime.Job) *counted {
	c := &counted{ended: make(chan struct{})}
	go func() {
		defer close(c.ended)
		for ev := range j.Events() {
			c.mu.Lock()
			c.evs = append(c.evs, ev)
			if l, ok := ev.(runtime.LogEvent); ok {
				if n, err := strconv.Atoi(l.Text); err == nil && n > c.last {
					c.last = n
				}
			}
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *counted) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// above waits until the count passes n.
func (c *counted) above(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for c.count() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("the count stays at %d, want above %d", c.count(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func paused(t *testing.T, id string) bool {
	t.Helper()
	res, err := dockertest.Client(t).ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil {
		t.Fatalf("inspecting %s: %v", id, err)
	}
	return res.Container.State.Paused
}

// A frozen job's containers are paused: they print nothing and do not
// end; thawed they go on; a Stop of a frozen job kills it at once,
// whatever its grace, and removes it.
func TestDockerFreezeThaw(t *testing.T) {
	t.Parallel()
	r := newRuntime(t)
	j := start(t, r, runtime.ServiceSpec{Name: "count", Command: sh(`i=0; while true; do i=$((i+1)); echo $i; sleep 0.02; done`)})
	c := countLines(j)
	c.above(t, 3)
	fz, ok := j.(runtime.Freezer)
	if !ok {
		t.Fatal("a Docker job is no Freezer")
	}
	id := j.(*job).services[0].id
	ctx := context.Background()
	if err := fz.Freeze(ctx); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	if !paused(t, id) {
		t.Fatal("the container of a frozen job is not paused")
	}
	time.Sleep(300 * time.Millisecond) // what it wrote before the pause is read
	before := c.count()
	time.Sleep(time.Second)
	if after := c.count(); after != before {
		t.Fatalf("a paused container went on printing: %d, then %d", before, after)
	}
	select {
	case <-c.ended:
		t.Fatal("a frozen job ended")
	default:
	}
	if err := fz.Freeze(ctx); err != nil { // again: no error
		t.Fatalf("Freeze again: %v", err)
	}
	if err := fz.Thaw(ctx); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	if paused(t, id) {
		t.Fatal("a thawed job's container is still paused")
	}
	c.above(t, before)

	if err := fz.Freeze(ctx); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	j.Stop("not wanted by the server", time.Hour)
	select {
	case <-c.ended:
	case <-time.After(testTimeout):
		t.Fatal("a frozen job did not end on Stop")
	}
	res := j.Wait()
	if res.Status != runtime.Error || res.Reason != "not wanted by the server" {
		t.Fatalf("result %+v", res)
	}
	assertRemoved(t, j.ID())
}

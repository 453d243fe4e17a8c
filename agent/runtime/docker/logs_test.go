package docker

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/dockertest"
)

// Issue 42: a service that prints a million lines at once, whose log is
// taken slowly (the agent's outbox is full and holds the runtime back),
// loses none of them: every line arrives, in order, and the service's end
// is reported after the last one, then the container goes.
func TestDockerSlowConsumerGetsTheWholeLog(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("prints a million lines")
	}
	const n = 1_000_000
	// The consumer takes at most this many lines a second once it starts:
	// slow enough that reading the rest after the container stopped lasts
	// far longer than any drain cutoff (there was one of 10 s, twice).
	const rate = 40_000
	r := newRuntime(t)
	j := start(t, r, runtime.ServiceSpec{Name: "main", Command: []string{"seq", "1", strconv.Itoa(n)}})
	// Nothing is taken until the container has stopped: its whole log then
	// waits in Docker, the runtime's reader stuck behind a full Events.
	waitContainerExited(t, j.ID())

	deadline := time.After(10 * time.Minute)
	began := time.Now()
	next := 1 // the line expected next
	var end *runtime.StateEvent
	var after []runtime.Event // anything of main after its end
	for open := true; open; {
		if next%1000 == 0 {
			if ahead := time.Duration(next)*time.Second/rate - time.Since(began); ahead > 0 {
				time.Sleep(ahead)
			}
		}
		select {
		case ev, ok := <-j.Events():
			if !ok {
				open = false
				break
			}
			switch ev := ev.(type) {
			case runtime.LogEvent:
				if end != nil {
					after = append(after, ev)
					continue
				}
				if ev.Service != "main" || ev.Stream != runtime.Stdout || ev.Text != strconv.Itoa(next) || ev.Seq != uint64(next) {
					t.Fatalf("line #%d is %d %s %s %q, want %d main stdout %q", next, ev.Seq, ev.Service, ev.Stream, ev.Text, next, strconv.Itoa(next))
				}
				next++
			case runtime.StateEvent:
				switch {
				case end != nil:
					after = append(after, ev)
				case ev.State == runtime.Exited || ev.State == runtime.Failed:
					end = &ev
				}
			}
		case <-deadline:
			t.Fatalf("the job's events did not end; %d lines so far", next-1)
		}
	}
	if next-1 != n {
		t.Errorf("%d lines, want %d (the first %d were right)", next-1, n, next-1)
	}
	if end == nil {
		t.Fatal("no end reported for main")
	}
	if end.State != runtime.Exited || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Errorf("main ended %s code=%v reason=%q, want exited 0", end.State, deref(end.ExitCode), end.Reason)
	}
	if len(after) > 0 {
		t.Errorf("%d events after main's end, the first %+v", len(after), after[0])
	}
	select {
	case <-j.Done():
	case <-time.After(testTimeout):
		t.Fatal("Done not closed after Events")
	}
	wantResult(t, j.Wait(), runtime.Complete, "")
	assertRemoved(t, j.ID())
}

// waitContainerExited waits until job's container has stopped.
func waitContainerExited(t *testing.T, jobID string) {
	t.Helper()
	cli := dockertest.Client(t)
	f := client.Filters{}.Add("label", labelJob+"="+jobID).Add("status", "exited")
	deadline := time.Now().Add(testTimeout)
	for {
		cs, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Items) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s's container did not stop within %s", jobID, testTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readWatched reads r through o's watch as the runtime does, handing each piece
// on to busy (the consumer) first; done gets how the read ended.
func readWatched(o *output, r io.Reader, busy func()) <-chan error {
	done := make(chan error, 1)
	go func() {
		w, b := watchedReader{r: r, o: o}, make([]byte, 64)
		for {
			if _, err := w.Read(b); err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				done <- err
				return
			}
			busy()
		}
	}()
	return done
}

// A stopped container's log stream that the daemon leaves open and silent
// is given up on.
func TestAwaitCutsAStuckStream(t *testing.T) {
	t.Parallel()
	o := &output{s: &service{name: "main"}}
	pr, pw := io.Pipe() // nothing is ever written
	done := readWatched(o, pr, func() {})
	cancel := func() { _ = pw.CloseWithError(context.Canceled) }
	err, cut := o.await(context.Background(), time.Now(), 50*time.Millisecond, done, cancel)
	if !cut || !errors.Is(err, context.Canceled) {
		t.Errorf("await = %v, cut %v; want the read cancelled", err, cut)
	}
}

// A reader that waits on its consumer far longer than a stream may stay
// silent is waited for: only waits on the daemon count.
func TestAwaitWaitsForASlowConsumer(t *testing.T) {
	t.Parallel()
	const stuck = 500 * time.Millisecond
	o := &output{s: &service{name: "main"}}
	pr, pw := io.Pipe()
	go func() {
		// Each write waits for its read: the daemon answers at once.
		for range 3 {
			_, _ = pw.Write([]byte("line\n"))
		}
		_ = pw.Close()
	}()
	done := readWatched(o, pr, func() { time.Sleep(2 * stuck) })
	cancel := func() { _ = pr.CloseWithError(context.Canceled) }
	if err, cut := o.await(context.Background(), time.Now(), stuck, done, cancel); cut || err != nil {
		t.Errorf("await = %v, cut %v; want the read to its end", err, cut)
	}
}

func TestCutNoteSaysWhatWasKept(t *testing.T) {
	t.Parallel()
	o := &output{s: &service{name: "web"}}
	o.kept.Store(623452)
	why := errors.New("the daemon sent nothing for 10s after the container stopped")
	want := "levers9: the log of web is cut here: Docker did not send the rest of it (the daemon sent nothing for 10s after the container stopped); 623452 lines kept"
	if got := o.cutNote(why); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	o.after = time.Now()
	o.kept.Store(1)
	if got, want := o.cutNote(why), "; 1 line kept since the agent took the job over"; !strings.HasSuffix(got, want) {
		t.Errorf("resumed: note %q, want it to end %q", got, want)
	}
}

package live

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncRecorder is a ResponseRecorder safe to read while Serve writes.
type syncRecorder struct {
	mu sync.Mutex
	*httptest.ResponseRecorder
}

func (r *syncRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ResponseRecorder.Write(b)
}

func (r *syncRecorder) Flush() {}

func (r *syncRecorder) body() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Body.String()
}

func TestServe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// states are what each push reads; the push after the last ends.
		states []string
		fail   bool
		want   []string // events in the body, in order
		absent []string
	}{
		{name: "first push at once, then one per wake, unchanged patches not resent",
			states: []string{"RUNNING", "RUNNING", "COMPLETE"},
			want:   []string{`event: patch`, `"text":"RUNNING"`, `"text":"COMPLETE"`, "event: end"}},
		{name: "a failing push ends the stream without end (the browser reconnects)",
			states: []string{"RUNNING"}, fail: true,
			want: []string{`"text":"RUNNING"`}, absent: []string{"event: end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &syncRecorder{ResponseRecorder: httptest.NewRecorder()}
			wake := make(chan struct{}, 1)
			n := 0
			push := func(ctx context.Context, s *Sender) (bool, error) {
				if n == len(tt.states) {
					if tt.fail {
						return false, errors.New("database gone")
					}
					return true, nil
				}
				err := s.Patch(TextClass("job-status", tt.states[n], "status status-"+tt.states[n]))
				n++
				wake <- struct{}{}
				return false, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := Serve(ctx, rec, wake, push)
			if tt.fail != (err != nil) {
				t.Fatalf("Serve: %v, want an error: %v", err, tt.fail)
			}
			body := rec.body()
			if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type %q", ct)
			}
			rest := body
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q missing (in order) from:\n%s", w, body)
				}
				rest = rest[i+len(w):]
			}
			if c := strings.Count(body, `"text":"RUNNING"`); c != 1 {
				t.Errorf("RUNNING sent %d times, want once (unchanged patches are not resent):\n%s", c, body)
			}
			for _, a := range tt.absent {
				if strings.Contains(body, a) {
					t.Errorf("%q in:\n%s", a, body)
				}
			}
		})
	}
}

// A burst of wakes right after a push waits MinGap: one re-read, not one
// per signal.
func TestServeCoalescesBursts(t *testing.T) {
	t.Parallel()
	rec := &syncRecorder{ResponseRecorder: httptest.NewRecorder()}
	wake := make(chan struct{}, 1)
	var times []time.Time
	push := func(ctx context.Context, s *Sender) (bool, error) {
		times = append(times, time.Now())
		if len(times) == 3 {
			return true, nil
		}
		wake <- struct{}{}
		return false, nil
	}
	if err := Serve(context.Background(), rec, wake, push); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < MinGap-10*time.Millisecond {
			t.Errorf("push %d came %v after the previous one, want at least %v", i, gap, MinGap)
		}
	}
}

// The stream stops when its context ends (the session signed out).
func TestServeEndsWithContext(t *testing.T) {
	t.Parallel()
	rec := &syncRecorder{ResponseRecorder: httptest.NewRecorder()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Serve(ctx, rec, make(chan struct{}), func(context.Context, *Sender) (bool, error) { return false, nil })
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not end with its context")
	}
	if strings.Contains(rec.body(), "event: end") {
		t.Error("a cancelled stream sent end: the page would stop listening")
	}
}

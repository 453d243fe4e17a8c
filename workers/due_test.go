package workers

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
)

// A periodic job behind ifDue inserts nothing while its check says no
// work waits, and its job again once it does; River's notice of each skip
// (checked to be what River really logs) stays out of the server's log.
func TestPeriodicJobSkippedUntilDue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		db := fixture.Open(t, url)
		worked := make(chan int, 10)
		w := river.NewWorkers()
		river.AddWorker(w, river.WorkFunc(func(_ context.Context, j *river.Job[noticeArgs]) error {
			worked <- j.Args.N
			return nil
		}))
		var due atomic.Bool
		checked := make(chan struct{}, 100)
		check := func(context.Context) (bool, error) {
			checked <- struct{}{}
			return due.Load(), nil
		}
		var raw, kept lockedBuf
		log := slog.New(tee{slog.NewTextHandler(&raw, nil), riverLog{slog.NewTextHandler(&kept, nil)}})
		periodic := river.NewPeriodicJob(river.PeriodicInterval(time.Second),
			ifDue(noticeArgs{N: 7}, check, log), &river.PeriodicJobOpts{RunOnStart: true})
		startClients(t, db, &river.Config{
			Logger:  log,
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
			Workers: w, PeriodicJobs: []*river.PeriodicJob{periodic},
			FetchPollInterval: time.Second, FetchCooldown: time.Millisecond,
		})

		for range 2 { // the start's run and a tick: both skipped
			select {
			case <-checked:
			case <-time.After(30 * time.Second): // only catches hangs
				t.Fatal("the check was not called")
			}
		}
		select {
		case n := <-worked:
			t.Fatalf("job %d worked while nothing was due", n)
		default:
		}
		due.Store(true)
		select {
		case <-worked:
		case <-time.After(30 * time.Second): // only catches hangs
			t.Fatal("the job was not inserted once due")
		}
		if !strings.Contains(raw.String(), skipMessage) {
			t.Errorf("River's skip notice changed; riverLog drops %q, River logged:\n%s", skipMessage, raw.String())
		}
		if strings.Contains(kept.String(), skipMessage) {
			t.Errorf("skip notices reached the log:\n%s", kept.String())
		}
	})
}

// A failing check runs the pass.
func TestIfDueRunsWhenTheCheckFails(t *testing.T) {
	args, _ := ifDue(noticeArgs{N: 1}, func(context.Context) (bool, error) { return false, errors.New("database gone") }, fixture.Log())()
	if args == nil {
		t.Fatal("a failed check skipped the pass")
	}
}

// tee hands each record to both handlers.
type tee struct{ a, b slog.Handler }

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	return errors.Join(t.a.Handle(ctx, r.Clone()), t.b.Handle(ctx, r.Clone()))
}

func (t tee) WithAttrs(as []slog.Attr) slog.Handler {
	return tee{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t tee) WithGroup(name string) slog.Handler {
	return tee{t.a.WithGroup(name), t.b.WithGroup(name)}
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

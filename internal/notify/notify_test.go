package notify_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/notify"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// waitSignal fails the test when no signal comes within a generous bound
// (it only catches hangs).
func waitSignal(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no signal")
	}
}

func TestSignalsReachSubscribers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := database.Open(ctx, url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// Two buses on one database stand for two replicas.
		a, b := notify.New(db.Pool, slog.New(slog.DiscardHandler)), notify.New(db.Pool, slog.New(slog.DiscardHandler))
		defer a.Close()
		defer b.Close()
		chA, stopA := a.Subscribe(notify.TopicNode, "n1")
		defer stopA()
		other, stopOther := a.Subscribe(notify.TopicNode, "n2")
		defer stopOther()
		if db.Pool != nil {
			chB, stopB := b.Subscribe(notify.TopicNode, "n1")
			defer stopB()
			// Each listener's first LISTEN wakes its subscribers (signals
			// sent before it are lost): let both come, however slowly the
			// connections do (or not at all, had a LISTEN beaten the
			// Subscribe), so the next wake-ups are the signal's.
			settle(other)
			settle(chB)
			drain(chA)
			if err := a.Publish(ctx, notify.TopicNode, "n1"); err != nil {
				t.Fatal(err)
			}
			waitSignal(t, chA)
			waitSignal(t, chB)
		} else {
			if err := a.Publish(ctx, notify.TopicNode, "n1"); err != nil {
				t.Fatal(err)
			}
			waitSignal(t, chA)
		}
		select {
		case <-other:
			t.Fatal("a signal for n1 woke the subscriber of n2")
		default:
		}
		// Signals merge rather than pile up for a subscriber that does not read.
		for range 1000 {
			_ = a.Publish(ctx, notify.TopicNode, "n1")
		}
		waitSignal(t, chA)
	})
}

// settle waits a while for ch's first wake-up.
func settle(ch <-chan struct{}) {
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
	}
}

func drain(chs ...<-chan struct{}) {
	for _, ch := range chs {
		select {
		case <-ch:
		default:
		}
	}
}

// A listener whose connection is killed reconnects, wakes every subscriber
// (signals sent meanwhile are lost) and delivers signals again.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := database.Open(ctx, url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if db.Pool == nil {
			t.Skip("signals stay in the process on SQLite: nothing to reconnect")
		}
		bus := notify.New(db.Pool, slog.New(slog.DiscardHandler))
		defer bus.Close()
		ch, stop := bus.Subscribe(notify.TopicJob, "j1")
		defer stop()
		// The first LISTEN wakes everyone, this subscriber only if it came
		// first: once the listener's connection shows, take that wake-up
		// if it comes, so the next one is the reconnect's.
		for listening := 0; listening == 0; time.Sleep(10 * time.Millisecond) {
			err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND query = 'LISTEN levers9'`).Scan(&listening)
			if err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-ch:
		case <-time.After(time.Second):
		}
		killed := 0
		for killed == 0 {
			err := db.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND query = 'LISTEN levers9'`).Scan(&killed)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		waitSignal(t, ch)
		if err := bus.Publish(ctx, notify.TopicJob, "j1"); err != nil {
			t.Fatal(err)
		}
		waitSignal(t, ch)
	})
}

// PublishMany reaches the subscriber of every signal it carries, of any
// topic, and no other.
func TestPublishMany(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := database.Open(ctx, url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		bus := notify.New(db.Pool, slog.New(slog.DiscardHandler))
		defer bus.Close()
		job, stopJob := bus.Subscribe(notify.TopicJob, "j1")
		defer stopJob()
		node, stopNode := bus.Subscribe(notify.TopicNode, "n1")
		defer stopNode()
		other, stopOther := bus.Subscribe(notify.TopicNode, "n2")
		defer stopOther()
		queues, stopQueues := bus.SubscribeAll(notify.TopicQueue)
		defer stopQueues()
		if db.Pool != nil { // the first LISTEN wakes everyone
			settle(job)
			drain(node, other)
		}
		if err := bus.PublishMany(ctx); err != nil { // nothing: no round trip, no error
			t.Fatal(err)
		}
		err = bus.PublishMany(ctx, notify.Signal{Topic: notify.TopicJob, Key: "j1"},
			notify.Signal{Topic: notify.TopicQueue, Key: "q1"}, notify.Signal{Topic: notify.TopicNode, Key: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		waitSignal(t, job)
		waitSignal(t, node)
		deadline := time.Now().Add(30 * time.Second)
		var got []string
		for len(got) == 0 && time.Now().Before(deadline) {
			select {
			case <-queues.C():
				got = queues.Take()
			case <-time.After(100 * time.Millisecond):
			}
		}
		if len(got) != 1 || got[0] != "q1" {
			t.Errorf("queue keys = %v; want [q1]", got)
		}
		select {
		case <-other:
			t.Error("a signal for n1 woke the subscriber of n2")
		default:
		}
	})
}

package tunnel

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/levers9/levers9/internal/wire"
)

// Every message taken off the inbox gives its bytes back, however it is
// taken, so a reader held by the byte bound resumes; until then it waits.
func TestInboxGivesBytesBack(t *testing.T) {
	t.Parallel()
	in := &inbox{ch: make(chan inbound, readAhead), room: semaphore.NewWeighted(10)}
	put := func(m wire.Msg, size int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := in.room.Acquire(ctx, size); err != nil {
			t.Fatalf("no room for %d bytes: %v", size, err)
		}
		in.ch <- inbound{m: m, size: size}
	}
	put(wire.StateChange{}, 4)
	put(wire.StateChange{}, 4)
	put(wire.Heartbeat{}, 2)
	if in.room.TryAcquire(1) {
		t.Fatal("the room held more than its bytes")
	}
	first, _ := in.take()
	batch, next := in.takeQueued([]inbound{first}, maxReportBatch, isReport)
	if len(batch) != 2 || next == nil || !isReport(batch[1].m) {
		t.Fatalf("batch %d, next %v; want two reports, then the heartbeat", len(batch), next)
	}
	if !in.room.TryAcquire(10) {
		t.Fatal("taken messages kept their bytes")
	}
}

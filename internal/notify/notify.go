// Package notify wakes up whoever waits on a change: the replica holding a
// node's tunnel when work is placed on the node, log and event subscribers
// when lines arrive, the scheduler when capacity frees up. Signals carry no
// data: receivers re-read the database, which holds every fact. On
// PostgreSQL signals cross replicas through LISTEN/NOTIFY; on SQLite (one
// replica) they stay in the process.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// channel is the PostgreSQL notification channel of levers9.
const channel = "levers9"

// Topics.
const (
	TopicNode = "node" // key: node ID; work for the node changed
	// TopicNodeAccess: key: node ID; its credential was revoked or the
	// node removed. The node's tunnels check their credential on it (and
	// every resync), not on every change of its work.
	TopicNodeAccess = "node-access"
	TopicJob        = "job"   // key: job ID; new log lines or events
	TopicQueue      = "queue" // key: queue ID; capacity or demand changed
	TopicToken      = "token" // key: API token ID; revoked, expired or moved to another tenant
	// Serverless functions.
	TopicFunction = "function" // key: function ID; calls are waiting for its containers
	TopicTask     = "task"     // key: task ID; the call changed state
	TopicMap      = "map"      // key: map ID; items of the map ended
)

// Bus delivers signals to subscribers.
type Bus struct {
	pool *pgxpool.Pool // nil: in-process only
	log  *slog.Logger

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // "topic:key" → subscribers
	all  map[string]map[*Keys]struct{}         // topic → subscribers to every key

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a bus; with a pgx pool it listens for other replicas' signals
// until Close.
func New(pool *pgxpool.Pool, log *slog.Logger) *Bus {
	b := &Bus{pool: pool, log: log, subs: map[string]map[chan struct{}]struct{}{}, done: make(chan struct{})}
	if pool == nil {
		close(b.done)
		return b
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.listen(ctx)
	return b
}

// Close stops listening.
func (b *Bus) Close() {
	if b.cancel != nil {
		b.cancel()
	}
	<-b.done
}

// Subscribe returns a channel that receives a value after each signal on
// topic and key (several signals may merge into one: it never blocks the
// sender and never grows), and a function to stop.
func (b *Bus) Subscribe(topic, key string) (<-chan struct{}, func()) {
	k := topic + ":" + key
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[k] == nil {
		b.subs[k] = map[chan struct{}]struct{}{}
	}
	b.subs[k][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[k], ch)
		if len(b.subs[k]) == 0 {
			delete(b.subs, k)
		}
		b.mu.Unlock()
	}
}

// Keys collects the keys signalled on a topic, each once until taken.
type Keys struct {
	mu   sync.Mutex
	keys map[string]struct{}
	ch   chan struct{}
}

func (k *Keys) add(key string) {
	k.mu.Lock()
	k.keys[key] = struct{}{}
	k.mu.Unlock()
	select {
	case k.ch <- struct{}{}:
	default:
	}
}

// C receives a value when keys are waiting to be taken.
func (k *Keys) C() <-chan struct{} { return k.ch }

// Take returns the keys signalled since the last Take.
func (k *Keys) Take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.keys))
	for key := range k.keys {
		out = append(out, key)
	}
	clear(k.keys)
	return out
}

// SubscribeAll collects every key signalled on topic (a set: it never
// grows beyond the number of distinct keys), and returns a function to stop.
func (b *Bus) SubscribeAll(topic string) (*Keys, func()) {
	ks := &Keys{keys: map[string]struct{}{}, ch: make(chan struct{}, 1)}
	b.mu.Lock()
	if b.all == nil {
		b.all = map[string]map[*Keys]struct{}{}
	}
	if b.all[topic] == nil {
		b.all[topic] = map[*Keys]struct{}{}
	}
	b.all[topic][ks] = struct{}{}
	b.mu.Unlock()
	return ks, func() {
		b.mu.Lock()
		delete(b.all[topic], ks)
		b.mu.Unlock()
	}
}

// Publish signals topic and key to every replica. Call it after the change
// is committed.
func (b *Bus) Publish(ctx context.Context, topic, key string) error {
	return b.PublishMany(ctx, Signal{Topic: topic, Key: key})
}

// Signal is one change to publish: a topic and the key within it.
type Signal struct{ Topic, Key string }

// PublishMany publishes several signals at once: one round trip on
// PostgreSQL, however many they are (a change that wakes a job, its queue
// and its nodes pays one).
func (b *Bus) PublishMany(ctx context.Context, signals ...Signal) error {
	if len(signals) == 0 {
		return nil
	}
	keys := make([]string, len(signals))
	for i, sg := range signals {
		keys[i] = sg.Topic + ":" + sg.Key
	}
	if b.pool == nil {
		for _, k := range keys {
			b.deliver(k)
		}
		return nil
	}
	// Our own listener receives them too: delivery is in one place.
	if _, err := b.pool.Exec(ctx, "SELECT pg_notify($1, k) FROM unnest($2::text[]) AS k", channel, keys); err != nil {
		return fmt.Errorf("notifying %s: %w", strings.Join(keys, ", "), err)
	}
	return nil
}

func (b *Bus) deliver(k string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if topic, key, ok := strings.Cut(k, ":"); ok {
		for ks := range b.all[topic] {
			ks.add(key)
		}
	}
	for ch := range b.subs[k] {
		select {
		case ch <- struct{}{}:
		default: // a signal is pending already
		}
	}
}

// wakeAll signals every subscriber, after the listener lost signals.
func (b *Bus) wakeAll() {
	b.mu.Lock()
	keys := make([]string, 0, len(b.subs))
	for k := range b.subs {
		keys = append(keys, k)
	}
	b.mu.Unlock()
	for _, k := range keys {
		b.deliver(k)
	}
}

// listenBackOff is the wait before the listener reconnects: doubling from
// 100 ms to 5 s, for as long as the bus is open.
func listenBackOff() backoff.BackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 100 * time.Millisecond, Multiplier: 2, MaxInterval: 5 * time.Second}
}

func (b *Bus) listen(ctx context.Context) {
	defer close(b.done)
	_, _ = backoff.Retry(ctx, func() (struct{}, error) {
		err := b.listenOnce(ctx)
		if err == nil {
			err = errors.New("listener ended")
		}
		return struct{}{}, err
	}, backoff.WithBackOff(listenBackOff()), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, wait time.Duration) {
		b.log.Warn("notification listener lost; reconnecting", "err", err, "in", wait)
	}))
}

func (b *Bus) listenOnce(ctx context.Context) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	// Signals sent while no one listened are lost: wake everyone to re-read.
	b.wakeAll()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				_, _ = conn.Exec(context.Background(), "UNLISTEN "+channel)
			}
			return err
		}
		if strings.Contains(n.Payload, ":") {
			b.deliver(n.Payload)
		}
	}
}

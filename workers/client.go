package workers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/scheduler"
)

// River's polls are backstops, so they are rare: an idle server should
// sleep. Work that must start at once never waits for River (a submission
// signals the in-process scheduler, scheduler.Run; River's passes are the
// durable backup), and River's own jobs are announced when inserted (LISTEN/
// NOTIFY on PostgreSQL, in-process notices on SQLite: localDriver). A poll
// only catches a notice River's per-queue limiter dropped (two inserts
// within FetchCooldown) or one lost with a connection.
const (
	fetchPollInterval = 5 * time.Second
	// fetchCooldownSQLite spaces fetches on SQLite (one local file, cheap).
	fetchCooldownSQLite = 10 * time.Millisecond
)

// Runner is the part of a River client that works jobs; its transaction
// type differs between drivers.
type Runner interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// Clients are the River clients of one database: Inserter enqueues inside
// the *sql.Tx shared with ent; Runner works the jobs. On SQLite one client
// does both; on PostgreSQL the runner uses pgx for LISTEN/NOTIFY.
type Clients struct {
	Inserter *river.Client[*sql.Tx]
	Runner   Runner

	passes pendingPasses // see InsertScheduleQueue
	// clock is the time backup windows are read from; nil: time.Now.
	clock func() time.Time
}

func (rc *Clients) now() time.Time {
	if rc.clock == nil {
		return time.Now()
	}
	return rc.clock()
}

// NewClients returns the River clients for db working the workers of d.
func NewClients(db *database.DB, d Deps) (*Clients, error) {
	if d.Scheduler == nil {
		d.Scheduler = &scheduler.Service{DB: db, Log: d.Log, Now: time.Now}
	}
	if db.Dialect == dialect.SQLite {
		d.SQLite = db
	}
	cfg := &river.Config{
		Logger:            slog.New(riverLog{d.Log.Handler()}).With("component", "river"),
		Queues:            Queues(),
		Workers:           Register(d),
		PeriodicJobs:      Periodic(d),
		FetchPollInterval: fetchPollInterval,
	}
	if db.Dialect == dialect.SQLite {
		cfg.FetchCooldown = fetchCooldownSQLite
	}
	return newClients(db, cfg)
}

// newClients returns the River clients of db with cfg; on PostgreSQL the
// inserter takes cfg's FetchCooldown, the spacing of its notices.
func newClients(db *database.DB, cfg *river.Config) (*Clients, error) {
	if db.Dialect == dialect.SQLite {
		c, err := river.NewClient(newLocalDriver(db.SQL), cfg)
		if err != nil {
			return nil, fmt.Errorf("creating River client: %w", err)
		}
		return &Clients{Inserter: c, Runner: c}, nil
	}
	ins, err := river.NewClient(riverdatabasesql.New(db.SQL), &river.Config{Logger: cfg.Logger, FetchCooldown: cfg.FetchCooldown})
	if err != nil {
		return nil, fmt.Errorf("creating River inserter: %w", err)
	}
	w, err := river.NewClient[pgx.Tx](riverpgxv5.New(db.Pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("creating River worker: %w", err)
	}
	return &Clients{Inserter: ins, Runner: w}, nil
}

// River on SQLite announces inserts by writing rows to river_notification,
// which its listener polls every 50 ms: the largest cost of an idle server.
// SQLite has one replica, so every listener is in this process: localDriver
// is River's SQLite driver with notices handed over in memory instead, and
// the table left alone.

// notices delivers River's notifications to the listeners of one database
// in this process.
type notices struct {
	mu        sync.Mutex
	listeners map[*localListener]struct{}
}

// noticesOf holds one notices per *sql.DB, so that several River clients
// of one database (tests make some) hear each other as through the table.
var noticesOf sync.Map // *sql.DB → *notices

func noticesFor(db *sql.DB) *notices {
	n, _ := noticesOf.LoadOrStore(db, &notices{listeners: map[*localListener]struct{}{}})
	return n.(*notices)
}

type notice struct{ topic, payload string }

func (n *notices) send(ns []notice) {
	if len(ns) == 0 {
		return
	}
	n.mu.Lock()
	ls := make([]*localListener, 0, len(n.listeners))
	for l := range n.listeners {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	for _, l := range ls {
		l.deliver(ns)
	}
}

func noticesOfMany(p *riverdriver.NotifyManyParams) []notice {
	ns := make([]notice, len(p.Payload))
	for i, payload := range p.Payload {
		ns[i] = notice{p.Topic, payload}
	}
	return ns
}

// cancelNotice is what River's SQLite JobCancel writes to the table for a
// running job's producer (its json_object, field for field).
func cancelNotice(p *riverdriver.JobCancelParams, job *rivertype.JobRow) []notice {
	if p.ControlTopic == "" || job == nil {
		return nil
	}
	payload, _ := json.Marshal(struct {
		Action string `json:"action"`
		JobID  int64  `json:"job_id"`
		Queue  string `json:"queue"`
	}{"cancel", job.ID, job.Queue})
	return []notice{{p.ControlTopic, string(payload)}}
}

// localDriver is riversqlite.Driver with notices in memory.
type localDriver struct {
	*riversqlite.Driver
	n *notices
}

func newLocalDriver(db *sql.DB) *localDriver {
	return &localDriver{Driver: riversqlite.New(db), n: noticesFor(db)}
}

func (d *localDriver) GetExecutor() riverdriver.Executor {
	return &localExec{Executor: d.Driver.GetExecutor(), n: d.n}
}

func (d *localDriver) GetListener(*riverdriver.GetListenenerParams) riverdriver.Listener {
	return &localListener{n: d.n, wake: make(chan struct{}, 1)}
}

// UnwrapExecutor wraps a transaction of the caller's (InsertTx): its
// notices go out at once, as River cannot see it commit. SQLite has one
// connection (database.Open), so a fetch they trigger runs after it ends.
func (d *localDriver) UnwrapExecutor(tx *sql.Tx) riverdriver.ExecutorTx {
	return &localTx{ExecutorTx: d.Driver.UnwrapExecutor(tx), n: d.n}
}

func (d *localDriver) UnwrapTx(execTx riverdriver.ExecutorTx) *sql.Tx {
	if t, ok := execTx.(*localTx); ok {
		execTx = t.ExecutorTx
	}
	return d.Driver.UnwrapTx(execTx)
}

// localExec runs outside any transaction: notices go out at once.
type localExec struct {
	riverdriver.Executor
	n *notices
}

func (e *localExec) Begin(ctx context.Context) (riverdriver.ExecutorTx, error) {
	tx, err := e.Executor.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &localTx{ExecutorTx: tx, n: e.n, held: true}, nil
}

func (e *localExec) NotifyMany(_ context.Context, p *riverdriver.NotifyManyParams) error {
	e.n.send(noticesOfMany(p))
	return nil
}

func (e *localExec) JobCancel(ctx context.Context, p *riverdriver.JobCancelParams) (*rivertype.JobRow, error) {
	job, err := e.Executor.JobCancel(ctx, p)
	if err == nil {
		e.n.send(cancelNotice(p, job))
	}
	return job, err
}

// localTx is a transaction. held: River began it, and its notices wait for
// its commit (into the enclosing transaction's, for a savepoint).
type localTx struct {
	riverdriver.ExecutorTx
	n      *notices
	held   bool
	parent *localTx

	mu      sync.Mutex
	pending []notice
}

func (t *localTx) add(ns []notice) {
	if !t.held {
		t.n.send(ns)
		return
	}
	t.mu.Lock()
	t.pending = append(t.pending, ns...)
	t.mu.Unlock()
}

func (t *localTx) Begin(ctx context.Context) (riverdriver.ExecutorTx, error) {
	sub, err := t.ExecutorTx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &localTx{ExecutorTx: sub, n: t.n, held: true, parent: t}, nil
}

func (t *localTx) Commit(ctx context.Context) error {
	if err := t.ExecutorTx.Commit(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	ns := t.pending
	t.pending = nil
	t.mu.Unlock()
	if t.parent != nil {
		t.parent.add(ns)
	} else {
		t.n.send(ns)
	}
	return nil
}

func (t *localTx) Rollback(ctx context.Context) error {
	t.mu.Lock()
	t.pending = nil
	t.mu.Unlock()
	return t.ExecutorTx.Rollback(ctx)
}

func (t *localTx) NotifyMany(_ context.Context, p *riverdriver.NotifyManyParams) error {
	t.add(noticesOfMany(p))
	return nil
}

func (t *localTx) JobCancel(ctx context.Context, p *riverdriver.JobCancelParams) (*rivertype.JobRow, error) {
	job, err := t.ExecutorTx.JobCancel(ctx, p)
	if err == nil {
		t.add(cancelNotice(p, job))
	}
	return job, err
}

// localListener is River's listener of one client: it waits on a channel.
type localListener struct {
	n    *notices
	wake chan struct{} // one value: notices are queued

	mu        sync.Mutex
	connected bool
	topics    map[string]bool
	queue     []notice
}

func (l *localListener) deliver(ns []notice) {
	l.mu.Lock()
	for _, n := range ns {
		if l.topics[n.topic] {
			l.queue = append(l.queue, n)
		}
	}
	queued := len(l.queue) > 0
	l.mu.Unlock()
	if queued {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

func (l *localListener) Connect(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.connected {
		return errors.New("connection already established")
	}
	l.connected, l.topics, l.queue = true, map[string]bool{}, nil
	l.n.mu.Lock()
	l.n.listeners[l] = struct{}{}
	l.n.mu.Unlock()
	return nil
}

func (l *localListener) Close(context.Context) error {
	l.n.mu.Lock()
	delete(l.n.listeners, l)
	l.n.mu.Unlock()
	l.mu.Lock()
	l.connected, l.topics, l.queue = false, nil, nil
	l.mu.Unlock()
	return nil
}

func (l *localListener) Listen(_ context.Context, topic string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.connected {
		return errors.New("listener is not connected")
	}
	l.topics[topic] = true
	return nil
}

func (l *localListener) Unlisten(_ context.Context, topic string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.connected {
		return errors.New("listener is not connected")
	}
	delete(l.topics, topic)
	return nil
}

func (l *localListener) Ping(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.connected {
		return errors.New("listener is not connected")
	}
	return nil
}

func (l *localListener) Schema() string             { return "" }
func (l *localListener) SetAfterConnectExec(string) {}

func (l *localListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	for {
		l.mu.Lock()
		if !l.connected {
			l.mu.Unlock()
			return nil, errors.New("listener is not connected")
		}
		if len(l.queue) > 0 {
			n := l.queue[0]
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return &riverdriver.Notification{Topic: n.topic, Payload: n.payload}, nil
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.wake:
		}
	}
}

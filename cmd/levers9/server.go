package main

import (
	"context"
	"database/sql"
	"entgo.io/ent/dialect"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/blobsapi"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/deployapi"
	"github.com/levers9/levers9/internal/filesapi"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/health"
	"github.com/levers9/levers9/internal/imagesapi"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metering"
	"github.com/levers9/levers9/internal/metrics/scrape"
	"github.com/levers9/levers9/internal/mounts"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/relay"
	"github.com/levers9/levers9/internal/runnerapi"
	"github.com/levers9/levers9/internal/sandboxes"
	"github.com/levers9/levers9/internal/scheduler"
	"github.com/levers9/levers9/internal/secrets"
	"github.com/levers9/levers9/internal/secretsapi"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tracing"
	"github.com/levers9/levers9/internal/tunnel"
	"github.com/levers9/levers9/storage"
	"github.com/levers9/levers9/ui"
	"github.com/levers9/levers9/ui/session"
	"github.com/levers9/levers9/workers"
)

// maxHeartbeatInterval bounds the agents' heartbeat interval, a third of
// the node TTL: each beat is a write, so an idle server with the default
// TTL (30 s) beats every 10 s.
const maxHeartbeatInterval = 10 * time.Second

// runServer runs the server configured by cfg (from parseServerConfig,
// which checked it) until ctx ends (SIGTERM): then it drains (/readyz
// fails while it serves on for cfg.DrainDelay) and stops.
func runServer(ctx context.Context, cfg serverConfig, stdout io.Writer) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// Everything runs on ctx, which outlives the signal while draining;
	// until the server is up, the signal ends it at once.
	signalled := ctx
	ctx, stopAll := context.WithCancel(context.WithoutCancel(signalled))
	defer stopAll()
	stopOnSignal := context.AfterFunc(signalled, stopAll)
	ready := &health.Service{Version: version, Commit: buildCommit(), Log: log.With("component", "health")}
	// Traces (--otlp-endpoint); without, the tracer is nil: no tracing work.
	tracer, stopTracing, err := startTracingTo(cfg.OTLPEndpoint, cfg.spanExporter, tracing.ServerService, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	var local *localRuntime
	if cfg.LocalNode {
		if local, err = prepareLocalNode(ctx, cfg.Local, dataDir, log.With("component", "local-node")); err != nil {
			return err
		}
		// The built-in node's spans are an agent's, as a joined node's are.
		var stopNodeTracing func()
		if local.tracer, stopNodeTracing, err = startTracingTo(cfg.OTLPEndpoint, cfg.spanExporter, tracing.AgentService, log); err != nil {
			return err
		}
		defer stopNodeTracing()
	}
	dbURL := cfg.DatabaseURL
	if dbURL == "" {
		dbURL = "sqlite:" + filepath.Join(dataDir, "levers9.db")
	}
	db, err := database.Open(ctx, dbURL, log)
	if err != nil {
		return err
	}
	defer db.Close()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	// Serving starts now behind a gate that answers only the probes until
	// the server is wired: migrations may take long (or wait for another
	// replica's), and an orchestrator must not kill the process meanwhile.
	migrated, riverUp := health.NewFlag("pending"), health.NewFlag("not started")
	ready.Add("database", health.Ping(db.SQL))
	ready.Add("migrations", migrated.Check)
	ready.Add("river", riverUp.Check)
	ready.Add("storage", health.All(health.Dir(dataDir), health.Dir(filepath.Join(dataDir, "blobs")), health.DirIfExists(filepath.Join(dataDir, "buckets"))))
	gate := health.NewGate(ready)
	srv := newHTTPServer(ctx, cfg.HTTP, gate)
	defer srv.Close() // after a Shutdown, a no-op; else it closes the listener
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if cfg.PprofAddr != "" {
		stop, err := servePprof(ctx, cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	replica := replicaURL(cfg.ReplicaURL, db.Dialect, ln.Addr())

	authn := auth.NewService(db.Ent, log, nil)
	ten := &tenancy.Service{DB: db, Log: log, LocalStorageRoot: filepath.Join(dataDir, "buckets"), Auth: authn}
	var seeded *tenancy.Seeded
	err = db.Exclusive(ctx, func() error {
		if err := db.Migrate(ctx); err != nil {
			return err
		}
		seeded, err = ten.Bootstrap(ctx, cfg.Seed)
		return err
	})
	if err != nil {
		return err
	}
	migrated.Set()

	bus := notify.New(db.Pool, log)
	defer bus.Close()
	authn.Bus = bus // revoked tokens end their streams on every replica
	jobService := &jobs.Service{DB: db, Log: log, Now: time.Now, Bus: bus}
	jobService.Tracer = tracer
	logs := &joblog.Service{DB: db, Bus: bus, Log: log}
	meter := &metering.Meter{DB: db, Log: log, Now: time.Now}
	sched := &scheduler.Service{DB: db, Bus: bus, Log: log, Now: time.Now}
	sched.Tracer = tracer
	go sched.Run(ctx)
	liveness := &nodes.Liveness{DB: db, Jobs: jobService, Bus: bus, Log: log, Now: time.Now, TTL: cfg.NodeTTL, Grace: cfg.NodeGrace}
	fileStore := &buckets.Files{Ent: db.Ent, AllowPrivateS3: cfg.AllowPrivateS3}
	// Serverless functions: code packages and large payloads are blobs
	// in the data directory.
	blobDriver, err := storage.OpenLocal(filepath.Join(dataDir, "blobs"))
	if err != nil {
		return err
	}
	defer blobDriver.Close()
	blobStore := &blobs.Store{DB: db, Driver: blobDriver, Log: log.With("component", "blobs")}
	keys, err := secretKeys(cfg, dataDir)
	if err != nil {
		return fmt.Errorf("secret keys: %w", err)
	}
	secretService := &secrets.Service{DB: db, Log: log.With("component", "secrets"), Keys: keys, Now: time.Now}
	// Rotation: secrets sealed with a key other than the first move to
	// it (replicas doing so at once are safe: each row moves once).
	if _, err := secretService.Reseal(ctx); err != nil {
		log.Warn("some secrets could not be re-encrypted with the first secret key: replicas sharing a database need the same keys (--secret-key-file, LEVERS9_SECRET_KEY)", "err", err)
	}
	bpService := &blueprints.Service{DB: db, Jobs: jobService, Blobs: blobStore, Log: log.With("component", "blueprints"), Now: time.Now}
	sandboxService := &sandboxes.Service{DB: db, Jobs: jobService, Blueprints: bpService, Log: log.With("component", "sandboxes")}
	fnService := &functions.Service{DB: db, Log: log.With("component", "functions"), Now: time.Now, Bus: bus, Jobs: jobService, Blobs: blobStore,
		Secrets: secretService, Blueprints: bpService}
	rc, err := workers.NewClients(db, workers.Deps{Ent: db.Ent, Log: log, Meter: meter, Jobs: jobService, Liveness: liveness, Files: fileStore,
		// With the bus, a placement wakes the node's tunnel at once.
		Scheduler: sched, Functions: fnService, Blueprints: bpService})
	if err != nil {
		return err
	}
	jobService.Schedule = workers.InsertScheduleJob(rc)
	jobService.ScheduleQueue = func(ctx context.Context, tx *sql.Tx, queueID string) error {
		return workers.InsertScheduleQueue(ctx, rc, tx, queueID)
	}
	jobService.Freed = workers.InsertScheduleFreed(rc)
	scheduleNode := workers.InsertScheduleNode(rc)
	if err := rc.Runner.Start(ctx); err != nil {
		return fmt.Errorf("starting River: %w", err)
	}
	riverUp.Set()
	if r, ok := rc.Runner.(interface{ Stopped() <-chan struct{} }); ok {
		go func() {
			select {
			case <-r.Stopped():
				riverUp.Clear("stopped")
			case <-ctx.Done():
			}
		}()
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = rc.Runner.Stop(stopCtx)
	}()

	// One node service for the tunnel (joins, presence), GraphQL and the
	// dashboard (invites, usage).
	nodeRules := &nodes.Service{DB: db, Ent: db.Ent, Bus: bus, Log: log.With("component", "nodes"), Now: time.Now, PublicURL: publicURL,
		CapacityChanged: func(ctx context.Context, nodeID string) error {
			return db.InTx(ctx, func(tx *database.Tx) error { return scheduleNode(ctx, tx.SQL, nodeID) })
		}}
	resolver := &graph.Resolver{
		DB: db, Ent: db.Ent, Log: log, Auth: authn, Tenancy: ten,
		JobService:     jobService,
		StorageService: buckets.Storages{LocalRoot: ten.LocalStorageRoot, AllowPrivateS3: cfg.AllowPrivateS3},
		Files:          fileStore,
		Ledger:         &ledger.Service{DB: db},
		QueueService:   &queues.Service{Ent: db.Ent},
		NodeService:    nodeRules,
		Logs:           logs,
		Functions:      fnService,
		Secrets:        secretService,
		PublicURL:      publicURL,
		RelayDomain:    cfg.RelayDomain,

		BlueprintService: bpService,
		SandboxService:   sandboxService,
	}
	resolver.Tracer = tracer
	mux := http.NewServeMux()
	mux.Handle("/graphql", graph.Authenticate(authn, log, graph.NewHandler(resolver)))
	planner := &mounts.Planner{Ent: db.Ent, Now: time.Now, LocalNode: localNodeID(cfg.LocalNode, dataDir)}
	tun := &tunnel.Server{DB: db, Jobs: jobService, Logs: logs, Nodes: nodeRules, Bus: bus, Log: log.With("component", "tunnel"), Now: time.Now, Mounts: planner, Replica: replica,
		FenceAfter: liveness.FenceAfter(),
		// Three heartbeats fit in a TTL, so one lost beat is no outage; no
		// more, so that an idle node and server sleep (10 s at the default TTL).
		HeartbeatInterval: min(max(cfg.NodeTTL/3, 100*time.Millisecond), maxHeartbeatInterval)}
	tun.Tracer = tracer
	runners := runnerapi.New(fnService, blobStore, log.With("component", "runner-api"))
	tun.Runners = &tunnel.Runners{Identify: runners.Identify, Handler: runners.Handler()}
	tun.Routes(mux)
	blobsAPI := blobsapi.New(blobsapi.Config{Blobs: blobStore, Auth: authn, Log: log.With("component", "blobs")})
	mux.Handle("/api/blobs/", blobsAPI.SDKHandler())
	mux.Handle("/agent/code/", blobsAPI.AgentHandler())
	mux.Handle("/agent/images/", (&imagesapi.API{Blueprints: bpService, Log: log.With("component", "images")}).Handler())
	mux.Handle("/agent/secrets", (&secretsapi.API{Ent: db.Ent, Secrets: secretService, Log: log.With("component", "secrets")}).Handler())
	fileStore.Nodes = tun.NodeDriver
	files := &filesapi.API{Files: fileStore, Auth: authn, Log: log.With("component", "files"), MaxUpload: cfg.MaxUpload, Mounts: planner}
	filesHandler := files.Handler()
	dashboard, err := ui.Routes(ctx, mux, ui.Config{DB: db, Auth: authn, Tenancy: ten, Jobs: jobService, Files: fileStore, Nodes: nodeRules, Bus: bus,
		Log: log, PublicURL: publicURL, MaxUpload: cfg.MaxUpload, Version: versionLabel(), RelayDomain: cfg.RelayDomain, Secrets: secretService, Functions: fnService})
	if err != nil {
		return err
	}
	var replicas relay.Replicas // nil: one replica, nothing to forward to
	if replica != "" {
		replicas = nodeRules
	}
	relays := &relay.Handler{
		Relay: &relay.Service{Jobs: jobService, Tunnel: tun, Replicas: replicas, Replica: replica, Log: log.With("component", "relay"),
			Active: &relay.Activity{Mark: markUsed(jobService, fnService), Log: log.With("component", "relay")}},
		Auth:     authn,
		Sessions: dashboard.WithViewer, SessionCookie: session.CookieName,
		Domain: cfg.RelayDomain,
		// Snapshots of sandboxes are blueprints.
		Snapshots: sandboxService,
	}
	relays.Routes(mux)
	deployapi.New(deployapi.Config{Functions: fnService, Auth: authn, Relay: relays, Blobs: blobStore, Log: log.With("component", "deployments")}).Routes(mux)
	// The relay domain's tickets and cookies live beside the dashboard's
	// sessions (the table exists by now), shared by replicas.
	relayStore, err := session.NewStore(ctx, db.SQL, db.Dialect)
	if err != nil {
		return err
	}
	relayDomain := &relay.Domain{Relay: relays, Store: relayStore, PublicURL: publicURL, Now: time.Now}
	relayDomain.Routes(mux)
	ready.Routes(mux) // GET /healthz and /readyz
	metrics, err := metricsHandler(cfg.Metrics, db, logs.Running, log.With("component", "metrics"))
	if err != nil {
		return err
	}
	mux.Handle("GET /metrics", scrape.Guard{Token: cfg.Metrics.Token, Auth: authn, Log: log}.Wrap(metrics))
	if cfg.Metrics.Addr != "" {
		stop, err := serveMetrics(ctx, cfg.Metrics.Addr, metrics, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	// From here on a signal drains; one that came while starting has
	// stopped everything already (stopOnSignal ran stopAll). Deciding it
	// only after the welcome left a window in which a signal sent as soon
	// as the server answered stopped it without draining.
	serving := stopOnSignal()
	gate.Open(relayDomain.Front(withFiles(filesHandler, mux)))

	printWelcome(stdout, publicURL, db.Dialect, seeded)
	log.Info("levers9 server listening", "url", publicURL, "database", db.Dialect, "replica", replica, "relayDomain", cfg.RelayDomain)

	localDone := make(chan struct{})
	if cfg.LocalNode {
		nodeCtx, stopNode := context.WithCancel(ctx)
		defer func() { stopNode(); <-localDone }()
		go func() {
			defer close(localDone)
			nlog := log.With("component", "local-node")
			if err := runLocalNode(nodeCtx, db, loopbackURL(ln.Addr()), dataDir, cfg.Seed.TenantSlug, local, nlog); err != nil {
				nlog.Error("local node stopped", "err", err)
			}
		}()
	} else {
		close(localDone)
	}
	if serving { // no signal before serving: serve until one comes
		select {
		case err := <-errc:
			return fmt.Errorf("serving HTTP: %w", err)
		case <-signalled.Done():
		}
		drain(ready, cfg.DrainDelay, log)
	}
	stopAll()
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down HTTP: %w", err)
	}
	return nil
}

// drain turns the server unready and keeps it serving for d, so that the
// load balancers polling /readyz stop sending it requests before it stops
// taking them. A second signal (an impatient Ctrl-C) cuts it short.
func drain(ready *health.Service, d time.Duration, log *slog.Logger) {
	if d <= 0 {
		ready.Drain()
		return
	}
	// Listening before turning unready: a second signal sent once /readyz
	// fails is never lost.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	ready.Drain()
	log.Info("draining: /readyz answers 503 while the server serves on; a second signal stops it now", "drainDelay", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-sig:
	}
}

func printWelcome(w io.Writer, url, dialectName string, s *tenancy.Seeded) {
	if dialectName == dialect.SQLite {
		dialectName = "sqlite" // ent calls it sqlite3, after the Go driver of old
	}
	fmt.Fprintf(w, "levers9 server on %s (database: %s)\n", url, dialectName)
	if s == nil {
		return
	}
	q := `{"query":"{ viewer { user { email } tenant { name } } }"}`
	fmt.Fprintf(w, `
First start: created tenant %q. These secrets are shown once:

  admin:       %s  password: %s
  superadmin:  %s  password: %s
  API token:   %s

Try it:
  curl -s %s/graphql -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '%s'

`, s.Tenant.Name, s.AdminEmail, s.AdminPassword, s.SuperadminEmail, s.SuperadminPassword,
		s.AdminToken, url, s.AdminToken, q)
}

// withFiles sends /files/ requests to the files API before the router sees
// them: the router would clean "a/../b" into another path, and the files
// API refuses such paths instead.
func withFiles(files, rest http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/files/") {
			files.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}

// markUsed records relay traffic: it keeps the jobs from their idle stop
// and, for a box's containers, counts as the box's use (which keeps it
// restarted after a crash).
func markUsed(j *jobs.Service, f *functions.Service) func(ctx context.Context, ids []string, at time.Time) error {
	return func(ctx context.Context, ids []string, at time.Time) error {
		return errors.Join(j.MarkActive(ctx, ids, at), f.MarkUsed(ctx, ids, at))
	}
}

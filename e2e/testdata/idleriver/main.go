// Command idleriver is a baseline of BenchmarkIdle: the server's River
// client (workers.NewClients: its queues, fetch polls, local notices on
// SQLite, LISTEN on PostgreSQL, the periodic scheduling pass) on the given
// database with nothing to do, and nothing else. It prints "ready" once
// River works and stops on SIGTERM.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/workers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: idleriver DATABASE_URL")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := database.Open(ctx, os.Args[1], log)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	clients, err := workers.NewClients(db, workers.Deps{Ent: db.Ent, Log: log})
	if err != nil {
		return err
	}
	if err := clients.Runner.Start(ctx); err != nil {
		return fmt.Errorf("starting River: %w", err)
	}
	fmt.Println("ready")
	<-ctx.Done()
	return clients.Runner.Stop(context.Background())
}

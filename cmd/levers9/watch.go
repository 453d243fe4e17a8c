package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"
)

// listTable prints what list reads once: as JSON, or as draw draws it.
func listTable[T any](ctx context.Context, name string, list func(context.Context) ([]T, error),
	draw func(io.Writer, []T) error, asJSON bool, stdout, stderr io.Writer) int {
	rows, err := list(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	if asJSON {
		return printJSON(stdout, stderr, rows)
	}
	if err := draw(stdout, rows); err != nil {
		return exitError
	}
	return exitOK
}

// watchEvery is how often a watched table is read again. The server has
// no push for a whole list of jobs or nodes (its subscriptions follow one
// job, task or map), so --watch reads the list again at this pace and
// redraws only when the table changed.
const watchEvery = 2 * time.Second

// watchTable draws the table, then redraws it whenever it changes until
// Ctrl-C, which ends the watch the user asked for: exit 0. On a terminal
// the screen is cleared for each drawing (as watch(1) does); in a pipe
// each new table follows the last after a blank line (as kubectl -w).
// A failed read is said on stderr and retried: a watch outlives a server
// restart.
func watchTable[T any](ctx context.Context, name string, list func(context.Context) ([]T, error),
	draw func(io.Writer, []T) error, terminal bool, stdout, stderr io.Writer) int {
	return watchTableEvery(ctx, name, list, draw, terminal, stdout, stderr, watchEvery)
}

// watchTableEvery is watchTable reading every interval.
func watchTableEvery[T any](ctx context.Context, name string, list func(context.Context) ([]T, error),
	draw func(io.Writer, []T) error, terminal bool, stdout, stderr io.Writer, interval time.Duration) int {
	var last []byte
	for drawn := false; ; {
		rows, err := list(ctx)
		switch {
		case ctx.Err() != nil:
			return exitOK
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v (retrying)\n", name, err)
		default:
			var buf bytes.Buffer
			if err := draw(&buf, rows); err != nil {
				return exitError
			}
			if !bytes.Equal(buf.Bytes(), last) {
				last = buf.Bytes()
				switch {
				case terminal:
					fmt.Fprintf(stdout, "\033[H\033[2J%s  (every %s; Ctrl-C ends)\n\n", time.Now().Format(time.TimeOnly), interval)
				case drawn:
					fmt.Fprintln(stdout)
				}
				if _, err := stdout.Write(last); err != nil {
					return exitError
				}
				drawn = true
			}
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(interval):
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/spf13/cobra"

	"github.com/levers9/levers9/internal/fault"
)

// logLine is one line as the jobLogs query and subscription return it.
type logLine struct {
	Attempt int    `json:"attempt"`
	Seq     int64  `json:"seq"`
	Service string `json:"service"`
	Stream  string `json:"stream"`
	Text    string `json:"text"`
}

const (
	logsQuery = `query($j: ID!, $a: Int, $f: Int!, $n: Int!) { jobLogs(jobId: $j, attempt: $a, fromSeq: $f, first: $n) { attempt seq service stream text } }`
	// Batches: a chatty job costs one event per batch, not per line.
	logsSub  = `subscription($j: ID!, $a: Int, $f: Int!) { jobLogBatches(jobId: $j, attempt: $a, fromSeq: $f) { attempt seq service stream text } }`
	logsPage = 1000
)

// newLogsCommand prints the lines of a job; with -f it follows them until
// the job has ended.
func newLogsCommand(a *app) *cobra.Command {
	var follow bool
	var from int64
	var attempt int
	cmd := &cobra.Command{
		Use:               "logs [-f] [--attempt N] [--from SEQ] [--json] JOB",
		Short:             "print a job's output; -f follows it until the job ends",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	fs := cmd.Flags()
	fs.BoolVarP(&follow, "follow", "f", false, "follow the lines until the job has ended")
	fs.Int64Var(&from, "from", 1, "first line to print (each attempt numbers its lines from 1)")
	fs.IntVar(&attempt, "attempt", 0, "the attempt whose lines to print (a job requeued after its node was lost runs again as the next attempt); default: the current one, and with -f the ones after it")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if attempt < 0 {
			fmt.Fprintln(a.stderr, "levers9 logs: --attempt must be 1 or more")
			return exitUsage
		}
		if len(args) != 1 {
			fmt.Fprintf(a.stderr, "Usage: %s\n%s", cmd.UseLine(), fs.FlagUsages())
			return exitUsage
		}
		return printJobLogs(cmd.Context(), c, args[0], follow, attempt, from, a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}

// printJobLogs prints the lines of job's attempt from seq from on; with
// --json one JSON object per line (attempt, seq, service, stream, text).
func printJobLogs(ctx context.Context, c clientFlags, job string, follow bool, attempt int, from int64, asJSON bool, stdout, stderr io.Writer) int {
	print := func(l logLine) { printLine(stdout, l) }
	if asJSON {
		enc := json.NewEncoder(stdout)
		print = func(l logLine) { _ = enc.Encode(l) }
	}
	var err error
	if follow {
		err = c.followAttempt(ctx, job, attempt, from, print)
	} else {
		err = c.printLogs(ctx, job, attempt, from, print)
	}
	if err != nil {
		fmt.Fprintln(stderr, "levers9 logs:", err)
		return exitError
	}
	return exitOK
}

// printLine prints "service | text", "service ! text" for stderr, or
// "service # text" for levers9's own notes (lines dropped, split).
func printLine(w io.Writer, l logLine) {
	mark := "|"
	switch l.Stream {
	case "stderr":
		mark = "!"
	case "system":
		mark = "#"
	}
	fmt.Fprintf(w, "%s %s %s\n", l.Service, mark, l.Text)
}

// attemptVar is an attempt as a GraphQL variable: null (the current one)
// for 0.
func attemptVar(attempt int) any {
	if attempt == 0 {
		return nil
	}
	return attempt
}

// printLogs pages through the stored lines of attempt (0: the current one).
func (c clientFlags) printLogs(ctx context.Context, job string, attempt int, from int64, print func(logLine)) error {
	for {
		var out struct{ JobLogs []logLine }
		if err := c.query(ctx, logsQuery, map[string]any{"j": job, "a": attemptVar(attempt), "f": from, "n": logsPage}, &out); err != nil {
			return err
		}
		for _, l := range out.JobLogs {
			print(l)
			from = l.Seq + 1
		}
		if len(out.JobLogs) < logsPage {
			return nil
		}
	}
}

// followLogs prints the lines of the job's current attempt from seq from
// on as they come, and those of each attempt after it should the job be
// requeued, until the job has ended.
func (c clientFlags) followLogs(ctx context.Context, job string, from int64, print func(logLine)) error {
	return c.followAttempt(ctx, job, 0, from, print)
}

// followAttempt prints the lines of attempt from seq from on as they come.
// A given attempt is followed until it is over; attempt 0 starts with the
// current one and goes on to the next whenever the job is requeued, until
// the job has ended. A dropped stream is resumed after the last line
// printed, so nothing is printed twice or skipped; resumptions back off
// (followBackOff) until a stream brings lines again.
func (c clientFlags) followAttempt(ctx context.Context, job string, attempt int, from int64, print func(logLine)) error {
	pinned := attempt != 0
	follow := func() (struct{}, error) {
		progressed := false
		done, err := c.streamLogs(ctx, job, attempt, from, func(l logLine) {
			print(l)
			from = l.Seq + 1
			progressed = true
			if attempt == 0 {
				attempt = l.Attempt // the current one, as the server took it
			}
		})
		if done {
			// SSE ends the same way when the server dropped the stream;
			// only an attempt that is over has no more lines.
			st, err := c.jobState(ctx, job)
			if err != nil {
				return struct{}{}, backoff.Permanent(err)
			}
			switch {
			case attempt != 0 && st.Attempt > attempt && !pinned:
				attempt, from = attempt+1, 1
				return struct{}{}, &backoff.RetryAfterError{} // the next attempt at once
			case attempt != 0 && st.Attempt > attempt, st.ended():
				return struct{}{}, nil
			}
			err = errStreamEnded
		}
		var apiErr apiError
		if errors.As(err, &apiErr) && permanent(apiErr) {
			return struct{}{}, backoff.Permanent(apiErr)
		}
		if progressed {
			// Lines came: the next wait starts from the shortest again.
			return struct{}{}, &backoff.RetryAfterError{Duration: followMinWait}
		}
		return struct{}{}, err
	}
	_, err := backoff.Retry(ctx, follow, backoff.WithBackOff(followBackOff()), backoff.WithMaxElapsedTime(0))
	if err != nil && ctx.Err() != nil {
		// Stopped (Ctrl-C): say so as context.Canceled, not as the
		// signal that caused it or a broken read.
		return ctx.Err()
	}
	return err
}

// errStreamEnded is a log stream the server ended before the job.
var errStreamEnded = errors.New("the log stream ended before the job")

// Waits between resumptions of a log stream.
const (
	followMinWait = 500 * time.Millisecond
	followMaxWait = 10 * time.Second
)

// followBackOff is how long a follower waits before resuming a stream that
// brought nothing: from followMinWait, doubling up to followMaxWait,
// jittered so that followers of a restarted server do not come back at
// once.
func followBackOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.MaxInterval = followMinWait, 2, followMaxWait
	return b
}

// jobState is what `run` and `logs -f` need to know about a job.
type jobState struct {
	Attempt      int
	Status       string
	StatusReason string
	Services     []struct {
		Name         string
		Status       string
		StatusReason string
		ExitCode     *int
	}
}

func (s jobState) ended() bool {
	return s.Status == "COMPLETE" || s.Status == "ERROR" || s.Status == "CANCELLED"
}

func (c clientFlags) jobState(ctx context.Context, job string) (jobState, error) {
	var out struct{ Node *jobState }
	err := c.query(ctx, `query($id: ID!) { node(id: $id) { ... on Job { attempt status statusReason services { name status statusReason exitCode } } } }`, map[string]any{"id": job}, &out)
	if err != nil {
		return jobState{}, err
	}
	if out.Node == nil {
		return jobState{}, apiError{Message: "job " + job + " not found", Extensions: map[string]any{"code": "NOT_FOUND"}}
	}
	return *out.Node, nil
}

// permanent reports whether retrying cannot help (fault.Code.Final).
func permanent(e apiError) bool {
	code, _ := e.Extensions["code"].(string)
	return fault.Code(code).Final()
}

// idleLimit ends a stream that sent nothing, not even the server's
// keep-alive (every 15 s), for this long: the connection is dead.
const idleLimit = 45 * time.Second

// streamLogs runs one jobLogBatches subscription over server-sent events. done is
// true when the server completed it (the job has ended, all lines sent).
func (c clientFlags) streamLogs(ctx context.Context, job string, attempt int, from int64, each func(logLine)) (done bool, err error) {
	if c.Token == "" {
		return false, apiError{Message: errNoToken, Extensions: map[string]any{"code": "UNAUTHENTICATED"}}
	}
	body, err := json.Marshal(map[string]any{"query": logsSub, "variables": map[string]any{"j": job, "a": attemptVar(attempt), "f": from}})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(idleLimit, cancel)
	defer idle.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.Server, "/")+"/graphql", bytes.NewReader(body))
	if err != nil {
		return false, apiError{Message: "server URL: " + err.Error(), Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("reaching %s: %w", c.Server, err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Refused before streaming (a bad token): a plain GraphQL answer.
		var r struct{ Errors []apiError }
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(raw, &r) == nil && len(r.Errors) > 0 {
			return false, r.Errors[0]
		}
		return false, fmt.Errorf("the server answered %s, not an event stream", resp.Status)
	}
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	var event string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return false, fmt.Errorf("reading the log stream: %w", err)
		}
		idle.Reset(idleLimit)
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			if event == "complete" {
				return true, nil
			}
		case strings.HasPrefix(line, "data: ") && event == "next":
			var r struct {
				Data   *struct{ JobLogBatches []logLine }
				Errors []apiError
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil {
				return false, fmt.Errorf("decoding the log stream: %w", err)
			}
			if len(r.Errors) > 0 {
				return false, r.Errors[0]
			}
			if r.Data != nil {
				for _, l := range r.Data.JobLogBatches {
					each(l)
				}
			}
		}
	}
}

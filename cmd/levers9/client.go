package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// clientFlags are the connection flags every client command takes, and
// the connection they resolve to: the flags, else LEVERS9_SERVER and
// LEVERS9_TOKEN, else the context named by -c, else the current context.
type clientFlags struct {
	Server string
	Token  string
	// Queue and Project are the context's defaults for submissions.
	Queue   string
	Project string

	serverFlag, tokenFlag, contextFlag string
}

const defaultServer = "http://127.0.0.1:8080"

// register declares the connection flags: global flags, before or after
// the command.
func (c *clientFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.serverFlag, "server", "", "server URL (default: LEVERS9_SERVER, then the context's)")
	fs.StringVar(&c.tokenFlag, "token", "", "API token (default: LEVERS9_TOKEN, then the context's)")
	fs.StringVarP(&c.contextFlag, "context", "c", "", "the context to use (default: the current one; see levers9 context)")
}

// errUnknownContext is -c naming no context.
type errUnknownContext string

func (e errUnknownContext) Error() string {
	return fmt.Sprintf("no context named %q (levers9 context list shows them)", string(e))
}

// resolve fills Server, Token, Queue and Project. The config file is read
// only when flags and environment leave something open, so scripts that
// set both variables never depend on it.
func (c *clientFlags) resolve() error {
	c.Server = first(c.serverFlag, os.Getenv("LEVERS9_SERVER"))
	c.Token = first(c.tokenFlag, os.Getenv("LEVERS9_TOKEN"))
	if c.contextFlag != "" || c.Server == "" || c.Token == "" {
		cfg, err := loadConfig(false, nil)
		if err != nil {
			return err
		}
		name := first(c.contextFlag, cfg.Current)
		ctx, found := cfg.Contexts[name]
		if c.contextFlag != "" && !found {
			return errUnknownContext(c.contextFlag)
		}
		c.Server = first(c.Server, ctx.Server)
		c.Token = first(c.Token, ctx.Token)
		c.Queue, c.Project = ctx.Queue, ctx.Project
	}
	server, err := serverURL(first(c.Server, defaultServer))
	if err != nil {
		return errBadServer{err}
	}
	c.Server = server
	return nil
}

// errBadServer is a server URL that is no URL: bad usage, like an unknown
// context.
type errBadServer struct{ error }

// first returns the first non-empty string.
func first(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// errNoToken is what a command without a token says.
const errNoToken = "no API token: run levers9 login, pass --token or set LEVERS9_TOKEN"

// apiError is an error the server answered with.
type apiError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

func (e apiError) Error() string {
	if code, ok := e.Extensions["code"].(string); ok {
		return code + ": " + e.Message
	}
	return e.Message
}

// query sends one GraphQL request and decodes its data into out. A query
// is retried while the server is unavailable (retryWindow); a mutation is
// sent once, since running it twice may not be harmless.
func (c clientFlags) query(ctx context.Context, q string, vars map[string]any, out any) error {
	if c.Token == "" {
		return errors.New(errNoToken)
	}
	return c.send(ctx, c.Token, q, vars, out)
}

// mutateSafely is query for a mutation that is harmless to run twice (one
// with an idempotency key): it is retried like a query.
func (c clientFlags) mutateSafely(ctx context.Context, q string, vars map[string]any, out any) error {
	if c.Token == "" {
		return errors.New(errNoToken)
	}
	return c.post(ctx, c.Token, q, vars, out, true)
}

// send is query with an explicit token; "" sends none (signIn).
func (c clientFlags) send(ctx context.Context, token, q string, vars map[string]any, out any) error {
	return c.post(ctx, token, q, vars, out, !isMutation(q))
}

// Retries of a request the server answered unavailable (502, 503, 504: a
// database restarting or failing over, a proxy in front of a restarting
// server). The server's Retry-After is honoured up to maxRetryWait, each
// wait is jittered so that clients refused together do not come back
// together, and no retry starts after retryWindow.
var (
	retryWindow  = time.Minute
	firstRetry   = 500 * time.Millisecond
	maxRetryWait = 10 * time.Second
)

// post sends one GraphQL request, retrying it when retry says that is
// harmless.
func (c clientFlags) post(ctx context.Context, token, q string, vars map[string]any, out any, retry bool) error {
	body, err := json.Marshal(map[string]any{"query": q, "variables": vars})
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	start, backoff := time.Now(), firstRetry
	for {
		wait, err := c.postOnce(ctx, token, body, out)
		if wait < 0 || !retry {
			return err
		}
		if wait == 0 {
			wait, backoff = backoff, min(2*backoff, maxRetryWait)
		}
		wait = min(wait+rand.N(wait/2+1), maxRetryWait)
		if time.Since(start)+wait > retryWindow {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// postOnce sends body once and decodes its data into out. wait is -1
// unless the server was unavailable: then the Retry-After it asked for,
// or 0 when it asked for none.
func (c clientFlags) postOnce(ctx context.Context, token string, body []byte, out any) (wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.Server, "/")+"/graphql", bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("server URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, fmt.Errorf("reaching %s: %w", c.Server, err)
	}
	defer resp.Body.Close()
	wait = -1
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		wait = retryAfter(resp.Header.Get("Retry-After"))
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return wait, fmt.Errorf("reading the answer: %w", err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []apiError      `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return wait, fmt.Errorf("the server answered %s, not GraphQL", resp.Status)
	}
	if len(r.Errors) > 0 {
		return wait, r.Errors[0]
	}
	if wait >= 0 {
		return wait, fmt.Errorf("the server answered %s", resp.Status)
	}
	return -1, json.Unmarshal(r.Data, out)
}

// retryAfter is a Retry-After header's wait (seconds or an HTTP date), 0
// when it says none.
func retryAfter(h string) time.Duration {
	if secs, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(h); err == nil {
		return max(time.Until(at), 0)
	}
	return 0
}

// isMutation reports whether the GraphQL document q is a mutation (its
// operation comes after any # comments).
func isMutation(q string) bool {
	for {
		q = strings.TrimLeft(q, " \t\r\n,")
		if !strings.HasPrefix(q, "#") {
			break
		}
		_, q, _ = strings.Cut(q, "\n")
	}
	rest, ok := strings.CutPrefix(q, "mutation")
	return ok && (rest == "" || !isNameChar(rest[0]))
}

func isNameChar(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// listRows runs query, a connection named field with edges { node { … } },
// and returns its nodes (an empty list, not nil, for JSON output).
func listRows[T any](ctx context.Context, c clientFlags, field, query string) ([]T, error) {
	var out map[string]struct{ Edges []struct{ Node T } }
	if err := c.query(ctx, query, nil, &out); err != nil {
		return nil, err
	}
	rows := []T{}
	for _, e := range out[field].Edges {
		rows = append(rows, e.Node)
	}
	return rows, nil
}

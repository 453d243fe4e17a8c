package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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

// query sends one GraphQL request and decodes its data into out.
func (c clientFlags) query(ctx context.Context, q string, vars map[string]any, out any) error {
	if c.Token == "" {
		return errors.New(errNoToken)
	}
	return c.send(ctx, c.Token, q, vars, out)
}

// send is query with an explicit token; "" sends none (signIn).
func (c clientFlags) send(ctx context.Context, token, q string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": q, "variables": vars})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.Server, "/")+"/graphql", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("server URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reaching %s: %w", c.Server, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []apiError      `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("the server answered %s, not GraphQL", resp.Status)
	}
	if len(r.Errors) > 0 {
		return r.Errors[0]
	}
	return json.Unmarshal(r.Data, out)
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

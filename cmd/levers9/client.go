package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// clientFlags are the connection flags every client command takes.
type clientFlags struct {
	Server string
	Token  string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Server, "server", env("LEVERS9_SERVER", "http://127.0.0.1:8080"), "server URL (LEVERS9_SERVER)")
	fs.StringVar(&c.Token, "token", os.Getenv("LEVERS9_TOKEN"), "API token (LEVERS9_TOKEN)")
}

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
		return errors.New("no API token: pass --token or set LEVERS9_TOKEN")
	}
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
	req.Header.Set("Authorization", "Bearer "+c.Token)
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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"
)

// dialStream opens one of the server's byte streams (path under
// /streams/: tcp/JOB/SERVICE/PORT, exec/JOB/SERVICE, attach/JOB/SERVICE)
// as a net.Conn that lives as long as ctx. A refusal comes back as the
// apiError the server said (NOT_FOUND, FORBIDDEN…), so it is printed as
// every other refusal is.
func (c clientFlags) dialStream(ctx context.Context, path string, query url.Values) (net.Conn, error) {
	if c.Token == "" {
		return nil, errors.New(errNoToken)
	}
	u := strings.TrimRight(c.Server, "/") + "/streams/" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}},
	})
	if err != nil {
		if refusal, ok := streamRefusal(resp); ok {
			return nil, refusal
		}
		return nil, fmt.Errorf("reaching %s: %w", c.Server, err)
	}
	// Streams carry whatever the other end sends: no message limit.
	return websocket.NetConn(ctx, ws, websocket.MessageBinary), nil
}

// streamRefusal reads the server's refusal of a stream before the upgrade:
// an HTTP status with {"code": "…", "error": "…"}.
func streamRefusal(resp *http.Response) (apiError, bool) {
	if resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return apiError{}, false
	}
	var body struct{ Code, Error string }
	if resp.Body != nil {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_ = json.Unmarshal(raw, &body)
	}
	if body.Error == "" {
		body.Error = "the server answered " + resp.Status
	}
	e := apiError{Message: body.Error}
	if body.Code != "" {
		e.Extensions = map[string]any{"code": body.Code}
	}
	return e, true
}

// refusalCode is the server's code of a refused stream ("" for other
// errors).
func refusalCode(err error) string {
	var e apiError
	if errors.As(err, &e) {
		code, _ := e.Extensions["code"].(string)
		return code
	}
	return ""
}

// streamPath joins escaped path segments.
func streamPath(segments ...string) string {
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	return strings.Join(segments, "/")
}

// jobServices is what exec, attach and port-forward need to know of a job
// to choose a service.
type jobServices struct {
	ID       string
	Status   string
	Services []struct {
		Name   string
		Status string
	}
}

// names are the job's services' names, in the job's order.
func (j jobServices) names() []string {
	n := make([]string, len(j.Services))
	for i, s := range j.Services {
		n[i] = s.Name
	}
	return n
}

func (c clientFlags) jobServices(ctx context.Context, job string) (jobServices, error) {
	var out struct{ Node *jobServices }
	err := c.query(ctx, `query($id: ID!) { node(id: $id) { ... on Job { id status services { name status } } } }`, map[string]any{"id": job}, &out)
	if err != nil {
		return jobServices{}, err
	}
	if out.Node == nil || out.Node.ID == "" {
		return jobServices{}, apiError{Message: "job " + job + " not found", Extensions: map[string]any{"code": "NOT_FOUND"}}
	}
	return *out.Node, nil
}

// chooseService is --service checked against the job's services, or else
// the job's first service.
func chooseService(services []string, want string) (string, error) {
	if len(services) == 0 {
		return "", errors.New("the job has no services")
	}
	if want == "" {
		return services[0], nil
	}
	for _, s := range services {
		if s == want {
			return s, nil
		}
	}
	return "", apiError{
		Message:    fmt.Sprintf("the job has no service %q (its services: %s)", want, strings.Join(services, ", ")),
		Extensions: map[string]any{"code": "NOT_FOUND"},
	}
}

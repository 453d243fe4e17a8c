package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// maxSecretsResponse bounds the answer of GET /agent/secrets: 100
// variables of 64 KiB per secret, a few secrets.
const maxSecretsResponse = 64 << 20

// secretEnv fetches the values of the secrets function container jobID
// names (wire.Runner.Secrets), right before it starts: they go into its
// services' environment only, never into the job's spec, a file or a
// log. Errors name the request, never a value.
func (a *Agent) secretEnv(ctx context.Context, jobID string) ([]runtime.EnvVar, error) {
	var got struct {
		Env []wire.EnvVar `json:"env"`
	}
	fc := a.files(jobID)
	url := strings.TrimRight(a.st.Server, "/") + "/agent/secrets"
	err := fc.do(ctx, "fetching the function's secrets", func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, url, nil)
	}, func(resp *http.Response) error {
		got.Env = nil
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxSecretsResponse)).Decode(&got); err != nil {
			// Not the decoder's message: it may quote what it read.
			return &refusedError{status: resp.StatusCode, msg: "the server's answer is not the secrets' JSON"}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	env := make([]runtime.EnvVar, 0, len(got.Env))
	for _, e := range got.Env {
		if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") || strings.HasPrefix(e.Name, "LEVERS9_") {
			return nil, fmt.Errorf("fetching the function's secrets: the server sent a variable named %.60q", e.Name)
		}
		env = append(env, runtime.EnvVar{Name: e.Name, Value: e.Value})
	}
	return env, nil
}

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeFunctions answers task show, app list and app stop.
func fakeFunctions(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string
			Variables map[string]any
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(req.Query, "on Task") && req.Variables["id"] == "task_1":
			fmt.Fprint(w, `{"data":{"node":{"id":"task_1","state":"ERROR","attempt":2,"maxAttempts":2,"mapID":null,"mapIndex":0,
				"errorKind":"exception","errorMessage":"ValueError: bad\nmore","errorTraceback":"Traceback (most recent call last):\nValueError: bad\n",
				"waitReason":null,"function":{"id":"fn_1","name":"embed","app":{"id":"app_1","name":"vision"}},
				"phases":{"queuedAt":"2026-01-01T00:00:00Z","scheduledAt":"2026-01-01T00:00:00.25Z","imageReadyAt":null,
				"codeFetchedAt":null,"processStartedAt":"2026-01-01T00:00:01Z","importedAt":"2026-01-01T00:00:01.5Z",
				"startedAt":"2026-01-01T00:00:02Z","finishedAt":"2026-01-01T00:00:03.125Z"}}}}`)
		case strings.Contains(req.Query, "on Task"):
			fmt.Fprint(w, `{"data":{"node":null}}`)
		case strings.Contains(req.Query, "stopApp"):
			fmt.Fprintf(w, `{"data":{"stopApp":{"id":%q,"name":"vision","state":"STOPPED","stopReason":"stopped by usr_1",
				"createdAt":"2026-01-01T00:00:00Z","owner":{"email":"a@x"},"functions":[]}}}`, req.Variables["id"])
		case strings.Contains(req.Query, "apps("):
			fmt.Fprint(w, `{"data":{"apps":{"edges":[{"node":{"id":"app_1","name":"vision","state":"RUNNING","ephemeral":true,
				"createdAt":"2026-01-01T00:00:00Z","stoppedAt":null,"stopReason":"","owner":{"email":"a@x"},"functions":[{"name":"embed"},{"name":"rank"}]}}]}}}`)
		default:
			t.Errorf("unexpected query %s", req.Query)
		}
	}))
}

func TestTaskShowAndApps(t *testing.T) {
	srv := fakeFunctions(t)
	defer srv.Close()
	t.Setenv("LEVERS9_SERVER", srv.URL)
	t.Setenv("LEVERS9_TOKEN", "lv9_x")
	code, out, stderr := runCLI(t, "task", "show", "task_1")
	if code != exitOK {
		t.Fatalf("task show: exit %d, %s", code, stderr)
	}
	for _, want := range []string{"vision.embed (fn_1)", "ERROR", "2 of 2", "exception: ValueError: bad", "scheduled", "+250ms",
		"finished", "+3.125s", "Traceback (most recent call last):"} {
		if !strings.Contains(out, want) {
			t.Errorf("task show lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "task", "show", "task_1", "--json")
	var row taskRow
	if code != exitOK || json.Unmarshal([]byte(out), &row) != nil || row.Function.Name != "embed" || row.Phases.FinishedAt == nil {
		t.Errorf("task show --json: exit %d, %s", code, out)
	}
	if code, _, stderr := runCLI(t, "task", "show", "task_2"); code != exitError || !strings.Contains(stderr, "NOT_FOUND") {
		t.Errorf("task show of a missing task: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "task", "show"); code != exitUsage {
		t.Errorf("task show without a task: exit %d, want 2", code)
	}
	if code, out, stderr := runCLI(t, "app", "list"); code != exitOK || !strings.Contains(out, "vision") || !strings.Contains(out, "embed,rank") {
		t.Errorf("app list: exit %d, %s %s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "app", "stop", "app_1"); code != exitOK || !strings.Contains(out, "app_1 STOPPED") {
		t.Errorf("app stop: exit %d, %s %s", code, out, stderr)
	}
}

package main

import (
	"strings"
	"testing"
)

func TestSandboxAndBlueprintCommands(t *testing.T) {
	f := serveFake(t,
		[2]string{"kind: SANDBOX", `{"data":{"jobs":{"edges":[{"node":{"id":"job_1","name":"nb","status":"RUNNING",
			"createdAt":"2026-01-01T00:00:00Z","startedAt":"2026-01-01T00:00:01Z","owner":{"email":"a@x"},
			"tunnels":[{"port":8888,"url":"https://l9.test/relay/job_1/sandbox/8888/"}]}}]}}}`},
		[2]string{"cancelJob", `{"data":{"cancelJob":{"id":"job_1","status":"CANCELLED","statusReason":"cancelled by a@x"}}}`},
		[2]string{"blueprints(", `{"data":{"blueprints":{"edges":[{"node":{"id":"bp_1","key":"0123456789abcdef","state":"READY",
			"source":"BUILD","failure":"","stepsBuilt":1,"exportBytes":3145728,"createdAt":"2026-01-01T00:00:00Z",
			"steps":[{"kind":"REGISTRY","summary":"FROM python:3.12-slim"},{"kind":"PIP","summary":"PIP torch pillow"}],
			"buildJob":{"id":"job_0"}}}]}}}`},
	)
	code, out, stderr := runCLI(t, "sandbox", "list")
	if code != exitOK || !strings.Contains(out, "job_1") || !strings.Contains(out, "8888=https://l9.test/relay/job_1/sandbox/8888/") ||
		!strings.Contains(out, "a@x") || !strings.Contains(out, "RUNNING") {
		t.Errorf("sandbox list: exit %d, %s %s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "sandbox", "terminate", "job_1"); code != exitOK || !strings.Contains(out, "job_1 CANCELLED") {
		t.Errorf("sandbox terminate: exit %d, %s %s", code, out, stderr)
	}
	if r := f.sent("cancelJob"); r.Variables["id"] != "job_1" {
		t.Errorf("terminate sent %+v", r.Variables)
	}
	code, out, stderr = runCLI(t, "blueprint", "list")
	if code != exitOK || !strings.Contains(out, "0123456789ab ") || strings.Contains(out, "0123456789abc") ||
		!strings.Contains(out, "PIP torch pillow") || !strings.Contains(out, "3.0 MiB") || !strings.Contains(out, "job_0") {
		t.Errorf("blueprint list: exit %d, %s %s", code, out, stderr)
	}
	for _, bad := range [][]string{{"sandbox", "terminate"}, {"sandbox", "list", "x"}, {"blueprint", "list", "x"}} {
		if code, _, _ := runCLI(t, bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

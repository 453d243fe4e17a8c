package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for i, m := range samples() {
		t.Run(fmt.Sprintf("%d_%s", i, m.Kind()), func(t *testing.T) {
			t.Parallel()
			for _, seq := range []uint64{0, 1, 1<<64 - 1} {
				b, err := EncodeSeq(seq, m)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				gotSeq, got, err := DecodeSeq(b)
				if err != nil {
					t.Fatalf("decode %s: %v", b, err)
				}
				if gotSeq != seq {
					t.Errorf("seq = %d, want %d", gotSeq, seq)
				}
				if !reflect.DeepEqual(got, m) {
					t.Errorf("round trip changed the message:\n got %#v\nwant %#v", got, m)
				}
			}
		})
	}
}

func TestEncodeAcceptsPointers(t *testing.T) {
	t.Parallel()
	b, err := Encode(&Welcome{HeartbeatIntervalMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := m.(Welcome); !ok || w.HeartbeatInterval() != time.Second {
		t.Fatalf("decoded %#v, want Welcome{1s}", m)
	}
}

func TestEnvelopeShape(t *testing.T) {
	t.Parallel()
	b, err := EncodeSeq(3, Stop{JobID: "job_1", Reason: "<timeout>", GraceSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"type":"stop","seq":3,"body":{"jobId":"job_1","reason":"<timeout>","graceSeconds":5}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

// raw builds an envelope around a body written by hand.
func raw(typ, body string) string {
	return fmt.Sprintf(`{"v":1,"type":%q,"body":%s}`, typ, body)
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	ts := `"2025-01-01T00:00:00Z"`
	big := `{"v":1,"type":"heartbeat","body":{"time":` + ts + `},"pad":"` + strings.Repeat("x", MaxMessageBytes) + `"}`
	longLine := strings.Repeat("y", MaxLogLineBytes+1)
	tests := []struct {
		name, in string
		is       error
		contains string
	}{
		{"empty", ``, ErrMalformed, "not a JSON object"},
		{"array", `[1]`, ErrMalformed, "not a JSON object"},
		{"null", `null`, ErrMalformed, "not a JSON object"},
		{"garbage", `{"v":1,`, ErrMalformed, ""},
		{"trailing data", raw("heartbeat", `{"time":`+ts+`}`) + `{}`, ErrMalformed, ""},
		{"too large", big, ErrTooLarge, "at most 1048576"},
		{"no version", `{"type":"heartbeat","body":{"time":` + ts + `}}`, ErrVersion, "none given"},
		{"version 0", `{"v":0,"type":"heartbeat","body":{"time":` + ts + `}}`, ErrVersion, "version 0 (this side speaks 1)"},
		{"version 2", `{"v":2,"type":"heartbeat","body":{"time":` + ts + `},"seq":"newer envelope"}`, ErrVersion, "version 2"},
		{"version not a number", `{"v":"1","type":"heartbeat","body":{}}`, ErrMalformed, ""},
		{"no type", `{"v":1,"body":{}}`, ErrUnknownType, `""`},
		{"unknown type", raw("reboot", `{}`), ErrUnknownType, `"reboot"`},
		{"no body", `{"v":1,"type":"heartbeat"}`, ErrMalformed, "without a body"},
		{"null body", raw("heartbeat", `null`), ErrMalformed, "without a body"},
		{"body not an object", raw("heartbeat", `"now"`), ErrMalformed, "heartbeat body"},
		{"wrong field type", raw("stop", `{"jobId":"job_1","graceSeconds":"10"}`), ErrMalformed, "stop body"},
		{"seq negative", `{"v":1,"type":"ack","seq":-1,"body":{"seq":1}}`, ErrMalformed, ""},
		{"hello empty node", raw("hello", `{"nodeId":"","agentVersion":"1","inventory":{"cpus":1,"memoryMiB":1}}`), ErrInvalid, "nodeId: is required"},
		{"hello node id with slash", raw("hello", `{"nodeId":"../etc","agentVersion":"1","inventory":{}}`), ErrInvalid, "not a valid ID"},
		{"hello negative cpus", raw("hello", `{"nodeId":"n1","agentVersion":"1","inventory":{"cpus":-1,"memoryMiB":1}}`), ErrInvalid, "inventory.cpus"},
		{"hello negative memory", raw("hello", `{"nodeId":"n1","agentVersion":"1","inventory":{"memoryMiB":-1}}`), ErrInvalid, "inventory.memoryMiB"},
		{"hello gpu count 0", raw("hello", `{"nodeId":"n1","agentVersion":"1","inventory":{"gpus":[{"type":"H100","count":0}]}}`), ErrInvalid, "inventory.gpus[0].count"},
		{"hello no agent version", raw("hello", `{"nodeId":"n1","inventory":{}}`), ErrInvalid, "agentVersion"},
		{"hello running without time", raw("hello", `{"nodeId":"n1","agentVersion":"1","inventory":{},"running":[{"jobId":"j","service":"a"}]}`), ErrInvalid, "running[0].startedAt: is required"},
		{"welcome no interval", raw("welcome", `{}`), ErrInvalid, "heartbeatIntervalMs"},
		{"heartbeat no time", raw("heartbeat", `{}`), ErrInvalid, "time: is required"},
		{"heartbeat zero time", raw("heartbeat", `{"time":"0001-01-01T00:00:00Z"}`), ErrInvalid, "time: is required"},
		{"heartbeat bad time", raw("heartbeat", `{"time":"yesterday"}`), ErrMalformed, ""},
		{"start no job", raw("start", `{"services":[{"name":"a","command":["true"]}]}`), ErrInvalid, "jobId: is required"},
		{"start no services", raw("start", `{"jobId":"j"}`), ErrInvalid, "at least one service"},
		{"start mount relative path", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]}],"mounts":[{"bucket":"bkt_1","path":"data/in"}]}`), ErrInvalid, "mounts[0].path"},
		{"start mount escaping path", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]}],"mounts":[{"bucket":"bkt_1","path":"/data/../../etc"}]}`), ErrInvalid, "mounts[0].path"},
		{"start mount at root", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]}],"mounts":[{"bucket":"bkt_1","path":"/"}]}`), ErrInvalid, "mounts[0].path"},
		{"start mount no bucket", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]}],"mounts":[{"bucket":"","path":"/in"}]}`), ErrInvalid, "mounts[0].bucket"},
		{"start mounts overlap", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]}],"mounts":[{"bucket":"b1","path":"/data"},{"bucket":"b2","path":"/data/out"}]}`), ErrInvalid, "overlaps"},
		{"start mount relative link", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]}],"mounts":[{"bucket":"b1","path":"/in","link":"buckets/b1"}]}`), ErrInvalid, "mounts[0].link"},
		{"start negative timeout", raw("start", `{"jobId":"j","timeoutSeconds":-1,"services":[{"name":"a","command":["true"]}]}`), ErrInvalid, "timeoutSeconds"},
		{"start service no command", raw("start", `{"jobId":"j","services":[{"name":"a"}]}`), ErrInvalid, "command or an image"},
		{"start bad service name", raw("start", `{"jobId":"j","services":[{"name":"A_B","command":["true"]}]}`), ErrInvalid, "services[0].name"},
		{"start duplicate service", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"]},{"name":"a","command":["true"]}]}`), ErrInvalid, "duplicate service"},
		{"start port out of range", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"ports":[{"name":"http","port":70000}]}]}`), ErrInvalid, "ports[0].port"},
		{"start negative port", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"ports":[{"name":"http","port":-1}]}]}`), ErrInvalid, "ports[0].port"},
		{"start duplicate port", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"ports":[{"name":"http"},{"name":"http"}]}]}`), ErrInvalid, "duplicate port"},
		{"start bad env name", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"env":[{"name":"A-B","value":""}]}]}`), ErrInvalid, "env[0].name"},
		{"start NUL in arg", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"args":["a\u0000b"]}]}`), ErrInvalid, "NUL"},
		{"start negative memory", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"memoryMiB":-5}]}`), ErrInvalid, "memoryMiB"},
		{"start negative cpu", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"cpu":-0.5}]}`), ErrInvalid, "cpu"},
		{"start gpu id with comma", raw("start", `{"jobId":"j","services":[{"name":"a","command":["true"],"gpus":["0,1"]}]}`), ErrInvalid, "gpus[0]"},
		{"stop negative grace", raw("stop", `{"jobId":"j","graceSeconds":-1}`), ErrInvalid, "graceSeconds"},
		{"stop long reason", raw("stop", `{"jobId":"j","reason":"`+strings.Repeat("r", MaxReasonBytes+1)+`"}`), ErrInvalid, "reason"},
		{"state unknown", raw("stateChange", `{"jobId":"j","service":"a","state":"DONE","time":`+ts+`}`), ErrInvalid, "not one of"},
		{"state exited without code", raw("stateChange", `{"jobId":"j","service":"a","state":"EXITED","time":`+ts+`}`), ErrInvalid, "EXITED means exit code 0"},
		{"state exited non-zero", raw("stateChange", `{"jobId":"j","service":"a","state":"EXITED","exitCode":1,"time":`+ts+`}`), ErrInvalid, "EXITED means exit code 0"},
		{"state running with code", raw("stateChange", `{"jobId":"j","service":"a","state":"RUNNING","exitCode":0,"time":`+ts+`}`), ErrInvalid, "only a final state"},
		{"state negative code", raw("stateChange", `{"jobId":"j","service":"a","state":"FAILED","exitCode":-1,"time":`+ts+`}`), ErrInvalid, "exitCode"},
		{"state port 0", raw("stateChange", `{"jobId":"j","service":"a","state":"RUNNING","ports":[{"name":"http","port":0}],"time":`+ts+`}`), ErrInvalid, "ports[0].port"},
		{"state no service", raw("stateChange", `{"jobId":"j","state":"RUNNING","time":`+ts+`}`), ErrInvalid, "service: is required"},
		{"logs no lines", raw("logs", `{"jobId":"j","lines":[]}`), ErrInvalid, "at least one line"},
		{"logs seq 0", raw("logs", `{"jobId":"j","lines":[{"service":"a","stream":"stdout","seq":0,"time":`+ts+`,"text":""}]}`), ErrInvalid, "start at 1"},
		{"logs gap", raw("logs", `{"jobId":"j","lines":[{"service":"a","stream":"stdout","seq":1,"time":`+ts+`,"text":""},{"service":"a","stream":"stdout","seq":3,"time":`+ts+`,"text":""}]}`), ErrInvalid, "contiguous"},
		{"logs duplicate seq", raw("logs", `{"jobId":"j","lines":[{"service":"a","stream":"stdout","seq":1,"time":`+ts+`,"text":""},{"service":"a","stream":"stdout","seq":1,"time":`+ts+`,"text":""}]}`), ErrInvalid, "contiguous"},
		{"logs bad stream", raw("logs", `{"jobId":"j","lines":[{"service":"a","stream":"stdin","seq":1,"time":`+ts+`,"text":""}]}`), ErrInvalid, "not stdout, stderr or system"},
		{"logs line too long", raw("logs", `{"jobId":"j","lines":[{"service":"a","stream":"stdout","seq":1,"time":`+ts+`,"text":"`+longLine+`"}]}`), ErrInvalid, "65537 bytes, at most 65536"},
		{"reconcile bad entry", raw("reconcile", `{"running":[{"jobId":"","service":"a","startedAt":`+ts+`}]}`), ErrInvalid, "running[0].jobId"},
		{"ack seq 0", raw("ack", `{}`), ErrInvalid, "seq: is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("decoded %#v, want an error", m)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if len(err.Error()) > 2000 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestInvalidErrorListsFields(t *testing.T) {
	t.Parallel()
	_, err := Decode([]byte(raw("start", `{"jobId":"","timeoutSeconds":-1,"services":[]}`)))
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("error %v is not an *InvalidError", err)
	}
	var fields []string
	for _, f := range inv.Fields {
		fields = append(fields, f.Field)
	}
	if want := []string{"jobId", "timeoutSeconds", "services"}; !reflect.DeepEqual(fields, want) {
		t.Errorf("fields = %v, want %v", fields, want)
	}
	if inv.Kind != KindStart {
		t.Errorf("kind = %q", inv.Kind)
	}
}

func TestInvalidErrorIsBounded(t *testing.T) {
	t.Parallel()
	var lines []LogLine
	for range 100 {
		lines = append(lines, LogLine{Service: "BAD", Stream: "x"})
	}
	err := Logs{JobID: "j", Lines: lines}.Validate()
	if err == nil || !strings.Contains(err.Error(), "and 390 more") {
		t.Fatalf("error = %v", err)
	}
}

func TestEncodeRefuses(t *testing.T) {
	t.Parallel()
	if _, err := Encode(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil: %v", err)
	}
	if _, err := Encode(Stop{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid stop: %v", err)
	}
	if _, err := Encode(other{}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("foreign type: %v", err)
	}
	// Many valid lines that together exceed the limit.
	var lines []LogLine
	for i := range 20 {
		lines = append(lines, LogLine{Service: "a", Stream: Stdout, Seq: uint64(i + 1), Time: t0, Text: strings.Repeat("\x00", MaxLogLineBytes)})
	}
	if _, err := Encode(Logs{JobID: "j", Lines: lines}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized logs: %v", err)
	}
}

type other struct{}

func (other) Kind() Kind      { return "other" }
func (other) Validate() error { return nil }

func TestUnknownFieldsIgnored(t *testing.T) {
	t.Parallel()
	m, err := Decode([]byte(`{"v":1,"type":"welcome","extra":true,"body":{"heartbeatIntervalMs":250,"future":{"a":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m != (Welcome{HeartbeatIntervalMs: 250}) {
		t.Fatalf("got %#v", m)
	}
}

func TestKindDirections(t *testing.T) {
	t.Parallel()
	for k := range decoders {
		if !k.FromAgent() && !k.FromServer() {
			t.Errorf("%s is sent by nobody", k)
		}
	}
	if KindStart.FromAgent() || !KindStart.FromServer() || !KindLogs.FromAgent() || KindLogs.FromServer() {
		t.Error("start goes server to agent, logs agent to server")
	}
	if !KindAck.FromAgent() || !KindAck.FromServer() {
		t.Error("either side acks")
	}
	if Kind("reboot").FromAgent() || Kind("reboot").FromServer() {
		t.Error("unknown kinds are sent by nobody")
	}
}

func TestSamplesCoverEveryKind(t *testing.T) {
	t.Parallel()
	seen := map[Kind]bool{}
	for _, m := range samples() {
		seen[m.Kind()] = true
	}
	for k := range decoders {
		if !seen[k] {
			t.Errorf("no sample of %s", k)
		}
	}
}

func TestSplitLogs(t *testing.T) {
	t.Parallel()
	// Worst-case lines: every byte escapes to six.
	var lines []LogLine
	for i := range 12 {
		lines = append(lines, LogLine{Service: "svc", Stream: Stderr, Seq: uint64(i + 1), Time: t0, Text: strings.Repeat("\x01", MaxLogLineBytes)})
	}
	for i := range 5000 {
		lines = append(lines, LogLine{Service: "svc", Stream: Stdout, Seq: uint64(13 + i), Time: t0, Text: "short line"})
	}
	msgs := SplitLogs("job_01", 1, lines)
	if len(msgs) < 5 {
		t.Fatalf("%d messages, want several", len(msgs))
	}
	var back []LogLine
	for i, m := range msgs {
		b, err := EncodeSeq(1<<64-1, m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if i < len(msgs)-1 && len(b) < MaxMessageBytes/2 {
			t.Errorf("message %d is only %d bytes", i, len(b))
		}
		back = append(back, m.Lines...)
	}
	if !reflect.DeepEqual(back, lines) {
		t.Error("split lost or reordered lines")
	}
	if got := SplitLogs("j", 1, nil); got != nil {
		t.Errorf("no lines gave %v", got)
	}
}

func TestNoHTMLEscaping(t *testing.T) {
	t.Parallel()
	b, err := Encode(Logs{JobID: "j", Lines: []LogLine{{Service: "a", Stream: Stdout, Seq: 1, Time: t0, Text: "<b>&</b>"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"<b>&</b>"`)) {
		t.Fatalf("text escaped: %s", b)
	}
	if !json.Valid(b) {
		t.Fatal("invalid JSON")
	}
}

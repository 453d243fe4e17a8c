package main

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestBoxRun: levers9 box run uploads an empty code package, deploys one
// BOX function running the command with its ports, and prints its URLs;
// bad usage is refused before anything is sent.
func TestBoxRun(t *testing.T) {
	var mu sync.Mutex
	var puts []string
	api := &scriptedAPI{t: t, answers: [][2]string{{"deployApp", `{"data":{"deployApp":{"id":"app_1","name":"box-python3","version":1}}}`}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/api/blobs/") {
			mu.Lock()
			puts = append(puts, r.URL.Path+"?"+r.URL.RawQuery)
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("LEVERS9_SERVER", srv.URL)
	t.Setenv("LEVERS9_TOKEN", "lv9_x")

	code, out, errOut := runCLI(t, "box", "run", "--port", "8000", "--port", "8001", "--cpu", "2", "--", "/usr/bin/python3", "-m", "http.server", "8000")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	empty := fmt.Sprintf("%x", sha256.Sum256([]byte("PK\x05\x06"+strings.Repeat("\x00", 18))))
	if len(puts) != 1 || puts[0] != "/api/blobs/"+empty+"?kind=code" {
		t.Fatalf("uploads %q, want the empty zip %s", puts, empty)
	}
	req := api.sent("deployApp")
	in := req.Variables["input"].(map[string]any)
	fn := in["functions"].([]any)[0].(map[string]any)
	if in["name"] != "box-python3" || in["code"] != empty || in["deploy"] != true || fn["kind"] != "BOX" ||
		fmt.Sprint(fn["ports"]) != "[8000 8001]" || fmt.Sprint(fn["command"]) != "[/usr/bin/python3 -m http.server 8000]" ||
		fn["name"] != "box_python3" || fn["deployment"] != "box-python3" || fn["cpu"] != 2.0 || fn["queue"] != "default" {
		t.Fatalf("deployed %+v", in)
	}
	for _, want := range []string{srv.URL + "/box/box-python3/8000/", srv.URL + "/box/box-python3/8001/", "levers9 app stop box-python3"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	for _, tc := range []struct {
		args []string
		say  string
	}{
		{[]string{"box", "run", "--", "sleep", "1"}, "no --port"},
		{[]string{"box", "run", "--port", "80"}, "no command"},
		{[]string{"box", "run", "--port", "80", "sleep", "1"}, "after --"},
		{[]string{"box", "run", "--port", "80", "--image", "x", "--blueprint", "bp_1", "--", "sleep"}, "give one"},
		{[]string{"box", "run", "--port", "0", "--", "sleep"}, "--port 0 is not a TCP port"},
		{[]string{"box", "run", "--port", "80", "--port", "70000", "--", "sleep"}, "--port 70000 is not a TCP port"},
		{[]string{"box", "run", "--port", "80", "--port", "80", "--", "sleep"}, "--port 80 given twice"},
		{[]string{"box", "run", "--port", "http", "--", "sleep"}, "http"},
	} {
		if code, _, errOut := runCLI(t, tc.args...); code != exitUsage || !strings.Contains(errOut, tc.say) {
			t.Errorf("%q: exit %d, want usage saying %q: %s", tc.args, code, tc.say, errOut)
		}
	}
	// A "--" after the first one belongs to the command.
	if code, _, errOut := runCLI(t, "box", "run", "--port", "80", "--", "sh", "-c", "exec \"$@\"", "--", "srv"); code != exitOK {
		t.Fatalf("a -- inside the command: exit %d: %s", code, errOut)
	}
	if fn := api.sent("deployApp").Variables["input"].(map[string]any)["functions"].([]any)[0].(map[string]any); fmt.Sprint(fn["command"]) != `[sh -c exec "$@" -- srv]` {
		t.Errorf("a -- inside the command: deployed %v", fn["command"])
	}
	if len(puts) != 2 {
		t.Errorf("bad usage uploaded: %q", puts)
	}
	if n := boxName("/opt/My Server!"); n != "box-my-server" {
		t.Errorf("boxName: %q", n)
	}
}

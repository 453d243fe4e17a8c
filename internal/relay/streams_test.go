package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/execution"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/wire"
)

// dialStream opens the WebSocket at path with token; the response is
// the refusal when it fails.
func (w *relayWorld) dialStream(t *testing.T, ctx context.Context, path, token string) (net.Conn, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(w.http.URL, "http") + path
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { c.CloseNow() })
	return websocket.NetConn(ctx, c, websocket.MessageBinary), resp, nil
}

func TestRelayStreamTCP(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		w := newRelayWorld(t, dburl, worldOptions{})
		j := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
		echo := strconv.Itoa(w.hostPorts(t, j.ID, "web")["echo"])
		cases := []struct{ name, port, token string }{
			{"the owner, by name", "echo", w.aliceTok},
			{"the owner, by number", echo, w.aliceTok},
			{"a tenant admin", "echo", w.adminTk},
			{"another member who sees the job", "echo", w.bobTok},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), hangBound)
				defer cancel()
				c, resp, err := w.dialStream(t, ctx, "/streams/tcp/"+j.ID+"/web/"+tc.port, tc.token)
				if err != nil {
					t.Fatalf("dial: %v (%v)", err, resp)
				}
				r := bufio.NewReader(c)
				for _, line := range []string{"hello\n", strings.Repeat("x", 100000) + "\n", "again\n"} {
					if _, err := io.WriteString(c, line); err != nil {
						t.Fatal(err)
					}
					got, err := r.ReadString('\n')
					if err != nil || got != strings.ToUpper(line) {
						t.Fatalf("echo = %.20q (%d bytes), %v; want %.20q", got, len(got), err, strings.ToUpper(line))
					}
				}
			})
		}
	})
}

// frame is one terminal frame a client received.
type frame struct {
	typ     byte
	payload string
}

// readTerminal reads frames from c until Exit or Error and returns the
// standard output, standard error and the last frame.
func readTerminal(t *testing.T, c io.Reader) (stdout, stderr string, last frame) {
	t.Helper()
	var out, errOut bytes.Buffer
	buf := make([]byte, wire.MaxFramePayload)
	for {
		typ, p, err := wire.ReadFrame(c, buf)
		if err != nil {
			t.Fatalf("reading frames (stdout so far %q): %v", out.String(), err)
		}
		switch typ {
		case wire.FrameStdout:
			out.Write(p)
		case wire.FrameStderr:
			errOut.Write(p)
		case wire.FrameExit, wire.FrameError:
			return out.String(), errOut.String(), frame{typ, string(p)}
		default:
			t.Fatalf("frame of type %d from the server", typ)
		}
	}
}

// execPath is /streams/exec for command in service svc of job id.
func execPath(id, svc string, command ...string) string {
	return "/streams/exec/" + id + "/" + svc + "?" + url.Values{"cmd": command}.Encode()
}

// noTerminals skips t when the node's runtime has no terminals (the
// agent says so when asked for one).
func noTerminals(t *testing.T, resp *http.Response) {
	t.Helper()
	if resp == nil || resp.StatusCode != http.StatusBadRequest {
		return
	}
	if r := readRefusal(t, resp); strings.Contains(r.Error, "offers no terminals") {
		t.Skipf("the process runtime has no terminals yet (runtime.Terminals): %s", r.Error)
	}
}

func TestRelayTerminals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		w := newRelayWorld(t, dburl, worldOptions{})
		shell := jobspec.Service{Name: "shell", Command: []string{"sh", "-c", "echo ready; exec cat"}, CPU: 1, MemoryMiB: 64, TTY: true}
		j := w.run(t, w.alice, jobspec.Job{Interactive: true, Services: []jobspec.Service{webService(t), shell}})

		execs := []struct {
			name, token string
			command     []string
			stdin       string
			stdout      string
			stderr      string
			exit        int
		}{
			{"output and exit code", w.aliceTok, []string{"sh", "-c", "echo hi; exit 3"}, "", "hi\n", "", 3},
			{"standard error", w.aliceTok, []string{"sh", "-c", "echo oops >&2"}, "", "", "oops\n", 0},
			{"input to its end", w.aliceTok, []string{"sh", "-c", "tr a-z A-Z"}, "some input", "SOME INPUT", "", 0},
			{"a tenant admin", w.adminTk, []string{"sh", "-c", "echo admin; exit 1"}, "", "admin\n", "", 1},
		}
		for _, tc := range execs {
			t.Run("exec: "+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), hangBound)
				defer cancel()
				c, resp, err := w.dialStream(t, ctx, execPath(j.ID, "web", tc.command...), tc.token)
				if err != nil {
					noTerminals(t, resp)
					t.Fatalf("dial: %v (%v)", err, resp)
				}
				if tc.stdin != "" {
					if err := wire.WriteFrame(c, wire.FrameStdin, []byte(tc.stdin)); err != nil {
						t.Fatal(err)
					}
				}
				if err := wire.WriteFrame(c, wire.FrameCloseStdin, nil); err != nil {
					t.Fatal(err)
				}
				stdout, stderr, last := readTerminal(t, c)
				if stdout != tc.stdout || stderr != tc.stderr || last != (frame{wire.FrameExit, string(wire.ExitPayload(tc.exit))}) {
					t.Errorf("stdout %q, stderr %q, last frame %v; want %q, %q, exit %d", stdout, stderr, last, tc.stdout, tc.stderr, tc.exit)
				}
				// Who ran what is in the tenant's audit log.
				v, err := w.auth.Authenticate(ctx, tc.token)
				if err != nil {
					t.Fatal(err)
				}
				n, err := w.db.Ent.AuditEvent.Query().Where(auditevent.Action("job.terminal.exec"), auditevent.Target(j.ID),
					auditevent.ActorID(v.UserID)).All(w.sys)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(n, func(e *ent.AuditEvent) bool {
					return e.Details["command"] == strings.Join(tc.command, " ") && e.Details["service"] == "web"
				}) {
					t.Errorf("no audit event of the exec of %q by %s", tc.command, v.UserID)
				}
				// And in the job's exec history, with how it ended.
				waitFor(t, "the execution's end", func() bool {
					es, err := w.db.Ent.Execution.Query().Where(execution.JobID(j.ID), execution.UserID(v.UserID),
						execution.EndedAtNotNil()).All(w.sys)
					if err != nil {
						t.Fatal(err)
					}
					return slices.ContainsFunc(es, func(e *ent.Execution) bool {
						return slices.Equal(e.Command, tc.command) && e.Service == "web" && !e.Tty &&
							e.ExitCode != nil && *e.ExitCode == tc.exit && e.Error == ""
					})
				})
			})
		}

		t.Run("attach", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			c, resp, err := w.dialStream(t, ctx, "/streams/attach/"+j.ID+"/shell?rows=24&cols=80", w.aliceTok)
			if err != nil {
				noTerminals(t, resp)
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			// The output before the attach is replayed; what is typed
			// comes back (the terminal echoes it, then cat).
			readUntil(t, c, "ready")
			if err := wire.WriteFrame(c, wire.FrameStdin, []byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			readUntil(t, c, "ping")
			c.Close()
			// Detaching leaves the service running.
			w.waitServiceRunning(t, j.ID, "shell")
		})
	})
}

// readUntil reads standard output frames from c until want appeared.
func readUntil(t *testing.T, c io.Reader, want string) {
	t.Helper()
	var out strings.Builder
	buf := make([]byte, wire.MaxFramePayload)
	for !strings.Contains(out.String(), want) {
		typ, p, err := wire.ReadFrame(c, buf)
		if err != nil {
			t.Fatalf("reading the terminal for %q (have %q): %v", want, out.String(), err)
		}
		if typ != wire.FrameStdout {
			t.Fatalf("frame %d %q waiting for %q (have %q)", typ, p, want, out.String())
		}
		out.Write(p)
	}
}

// waitServiceRunning checks that service svc of job id still runs.
func (w *relayWorld) waitServiceRunning(t *testing.T, id, svc string) {
	t.Helper()
	s, err := w.db.Ent.Service.Query().Where(service.JobID(id), service.Name(svc)).Only(w.sys)
	if err != nil || s.Status != service.StatusRunning {
		t.Fatalf("service %s: %v, %v; want it running", svc, s, err)
	}
}

// TestRelayTokenEndsStreams: a stream outlives the request that opened
// it, but not the token: revoking it ends the stream.
func TestRelayTokenEndsStreams(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dburl string) {
		t.Parallel()
		w := newRelayWorld(t, dburl, worldOptions{})
		j := w.run(t, w.alice, jobspec.Job{Services: []jobspec.Service{webService(t)}})
		cases := []struct {
			name string
			path string
			// roundTrip checks the stream works before the revocation.
			roundTrip func(t *testing.T, c net.Conn)
		}{
			{"port-forward", "/streams/tcp/" + j.ID + "/web/echo", func(t *testing.T, c net.Conn) {
				if _, err := io.WriteString(c, "hi\n"); err != nil {
					t.Fatal(err)
				}
				if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "HI\n" {
					t.Fatalf("echo = %q, %v", got, err)
				}
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), hangBound)
				defer cancel()
				tok := w.tn.Token(t, w.alice)
				c, resp, err := w.dialStream(t, ctx, tc.path, tok)
				if err != nil {
					t.Fatalf("dial: %v (%v)", err, resp)
				}
				tc.roundTrip(t, c)
				w.revoke(t, tok)
				_, err = io.ReadAll(c)
				if ctx.Err() != nil {
					t.Fatalf("the stream outlived its revoked token (%v)", err)
				}
			})
		}

		t.Run("relayed websocket", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			tok := w.tn.Token(t, w.alice)
			u := "ws" + strings.TrimPrefix(w.http.URL, "http") + "/relay/" + j.ID + "/web/http/ws"
			c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer c.CloseNow()
			if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, got, err := c.Read(ctx); err != nil || string(got) != "HI" {
				t.Fatalf("echo = %q, %v", got, err)
			}
			w.revoke(t, tok)
			if _, got, err := c.Read(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("read %q, %v after the revocation; want the connection ended", got, err)
			}
		})
	})
}

// revoke revokes API token tok of alice.
func (w *relayWorld) revoke(t *testing.T, tok string) {
	t.Helper()
	v, err := w.auth.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.auth.RevokeAPIToken(w.tn.As(w.alice), v.TokenID); err != nil {
		t.Fatal(err)
	}
}

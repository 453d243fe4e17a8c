"""Sandboxes without a server: create/wait/terminate against a fake
GraphQL client, and exec against a fake relay speaking the terminal frame
protocol over WebSocket (frames split across and packed into messages):
lines arrive before the process ends, exit codes, stdin, signals,
several at once, files through exec (the real path runs in
e2e/sandbox_docker_test.go)."""

import io
import json
import struct
import threading
import time
import unittest
import urllib.parse
from unittest import mock

import levers9
from levers9 import sandbox as sbmod
from levers9 import wsclient
from tests.test_wsclient import FakeServer, ServerConn


def frame(typ, payload=b""):
    return sbmod.frame(typ, payload)


class Exec:
    """The process side of one exec stream on the fake relay."""

    def __init__(self, conn: ServerConn, server: "FakeRelay"):
        self.conn = conn
        self.server = server
        self.buf = bytearray()
        q = urllib.parse.urlsplit(conn.path)
        self.path = q.path
        self.query = urllib.parse.parse_qs(q.query)
        self.cmd = self.query.get("cmd", [])

    def send(self, *frames, split=False):
        data = b"".join(frames)
        if split:  # one byte per message: frames cut anywhere
            for i in range(len(data)):
                self.conn.binary(data[i:i + 1])
        else:
            self.conn.binary(data)

    def exit(self, code):
        self.send(frame(sbmod.FRAME_EXIT, struct.pack("!i", code)))
        self.conn.close()

    def read_frame(self):
        while True:
            if len(self.buf) >= 4:
                n = (self.buf[1] << 16) | (self.buf[2] << 8) | self.buf[3]
                if len(self.buf) >= 4 + n:
                    typ, payload = self.buf[0], bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return typ, payload
            op, data = self.conn.message()
            if op == wsclient.OP_CLOSE:
                raise EOFError()
            self.buf += data

    def stdin(self):
        data = b""
        while True:
            typ, payload = self.read_frame()
            if typ == sbmod.FRAME_STDIN:
                data += payload
            elif typ == sbmod.FRAME_CLOSE_STDIN:
                return data

    def run(self):
        cmd = self.cmd
        fs = self.server.fs
        if cmd == ["lines"]:
            self.send(frame(sbmod.FRAME_STDOUT, b"one\ntw"), frame(sbmod.FRAME_STDERR, b"warn\n"), split=True)
            self.send(frame(sbmod.FRAME_STDOUT, b"o\n"))
            # The process goes on until the test has seen its first lines.
            assert self.server.go_on.wait(10), "the client never saw the lines"
            self.send(frame(sbmod.FRAME_STDOUT, "thrée\nlast without newline".encode()))
            self.exit(0)
        elif cmd == ["cat"]:
            while True:
                typ, payload = self.read_frame()
                if typ == sbmod.FRAME_STDIN:
                    self.send(frame(sbmod.FRAME_STDOUT, payload))
                elif typ == sbmod.FRAME_CLOSE_STDIN:
                    break
            self.exit(0)
        elif cmd == ["fail"]:
            self.send(frame(sbmod.FRAME_STDERR, b"boom\n"), frame(sbmod.FRAME_EXIT, struct.pack("!i", 3)))
            self.conn.close()
        elif cmd == ["refused"]:
            self.send(frame(sbmod.FRAME_ERROR, b"exec: \"refused\": executable file not found in $PATH"))
            self.conn.close()
        elif cmd == ["sleep"]:
            typ, payload = self.read_frame()
            assert typ == sbmod.FRAME_SIGNAL, typ
            self.exit(128 + payload[0])
        elif cmd == ["mute"]:  # never answers, not even a close
            self.server.go_on.wait(10)
            self.conn.close()
        elif cmd == ["cut"]:
            self.send(frame(sbmod.FRAME_STDOUT, b"partial"))
            self.conn.sock.shutdown(2)
        elif cmd[:2] == ["cat", "--"]:
            path = cmd[2]
            if path in fs and fs[path] is None:
                self.send(frame(sbmod.FRAME_STDERR, b"cat: %s: Is a directory\n" % path.encode()))
                self.exit(1)
            elif path in fs:
                data = fs[path]
                for i in range(0, max(len(data), 1), sbmod.MAX_FRAME_PAYLOAD):
                    self.send(frame(sbmod.FRAME_STDOUT, data[i:i + sbmod.MAX_FRAME_PAYLOAD]))
                self.exit(0)
            else:
                self.send(frame(sbmod.FRAME_STDERR, b"cat: %s: No such file or directory\n" % path.encode()))
                self.exit(1)
        elif cmd[:2] == ["sh", "-c"] and cmd[3] == "sh":
            assert 'cat > "$1"' in cmd[2]
            fs[cmd[4]] = self.stdin()
            self.exit(0)
        elif cmd[:2] == ["ls", "-1A"]:
            prefix = cmd[3].rstrip("/") + "/"
            names = sorted({p[len(prefix):].split("/")[0] for p in fs if p.startswith(prefix)})
            self.send(frame(sbmod.FRAME_STDOUT, "".join(n + "\n" for n in names).encode()))
            self.exit(0)
        elif cmd[:2] == ["mkdir", "-p"]:
            fs[cmd[3]] = None
            self.exit(0)
        elif cmd[0] == "rm":
            path = cmd[-1]
            if path not in fs:
                self.send(frame(sbmod.FRAME_STDERR, b"rm: cannot remove '%s': No such file or directory\n"
                                % path.encode()))
                self.exit(1)
            else:
                del fs[path]
                self.exit(0)
        else:
            self.send(frame(sbmod.FRAME_ERROR, b"unknown command %r" % cmd))
            self.conn.close()


class FakeRelay(FakeServer):
    def __init__(self):
        self.fs = {}
        self.go_on = threading.Event()
        self.execs = []
        super().__init__(self.handle, token="tok")

    def handle(self, conn: ServerConn):
        e = Exec(conn, self)
        self.execs.append(e)
        e.run()


class FakeHTTP:
    def __init__(self, server, token="tok"):
        self.server = server
        self.token = token
        self.timeout = 30.0
        self.requests = []
        self.answer = b""

    def request(self, method, path, body=None, headers=None, idempotent=True, timeout=None, auth=True):
        self.requests.append((method, path, idempotent))
        if (headers or {}).get("Accept") == "text/event-stream":
            return self.subscription(json.loads(body.decode("utf-8")))
        return io.BytesIO(self.answer)

    # events: the job's events the push sends (None: no push, as through
    # a proxy that refuses it); complete: the server ends the stream.
    events = None
    complete = True

    def subscription(self, doc):
        if self.events is None:
            raise levers9.NetworkError("no event stream here")
        assert "jobEvents(jobId: $id)" in doc["query"] and doc["variables"] == {"id": "job_sb"}, doc
        out = b""
        for ev in self.events:
            out += b"event: next\ndata: " + json.dumps({"data": {"jobEvents": ev}}).encode() + b"\n\n"
        if self.complete:
            out += b"event: complete\n\n"
        return SSEResponse(out)


class SSEResponse(io.BytesIO):
    headers = {"Content-Type": "text/event-stream"}


class FakeClient:
    default_queue = "default"
    default_project = ""

    def __init__(self, server_url, answers):
        self.server = server_url
        self._http = FakeHTTP(server_url)
        self.answers = answers
        self.requests = []

    def graphql(self, query, variables=None, idempotent=None):
        self.requests.append((query, variables or {}, idempotent))
        for field, answer in self.answers.items():
            if field + "(" in query:
                if isinstance(answer, list):
                    answer = answer.pop(0) if len(answer) > 1 else answer[0]
                return {field: answer(variables) if callable(answer) else answer}
        raise AssertionError("unexpected request: " + query)


def job(status, svc="RUNNING", reason=""):
    return {"id": "job_sb", "name": "", "status": status, "statusReason": reason,
            "services": [{"name": "sandbox", "status": svc, "statusReason": reason, "exitCode": None}]}


class SandboxTest(unittest.TestCase):
    def setUp(self):
        self.relay = FakeRelay()
        self.addCleanup(self._check)

    def _check(self):
        self.relay.close()
        if self.relay.errors:
            raise self.relay.errors[0]

    def sandbox(self, **answers):
        client = FakeClient(self.relay.url, dict({"node": job("RUNNING")}, **answers))
        return levers9.Sandbox(client, "job_sb", job("RUNNING")), client

    # Creating, waiting, ending

    def test_create_waits_until_running(self):
        client = FakeClient(self.relay.url, {
            "createSandbox": job("PENDING", "PENDING"),
            "node": [job("PENDING", "PENDING"), job("RUNNING", "PENDING"), job("RUNNING")],
            "cancelJob": job("CANCELLED", "CANCELLED")})
        bp = levers9.Blueprint.debian_slim()
        bp._set({"id": "bp_1", "state": "READY"})
        sb = levers9.Sandbox.create(blueprint=bp, gpu="H100", cpu=2, memory=4096, timeout=600, ports=[8888],
                                    env={"A": "1"}, queue="interactive", name="nb", client=client)
        self.assertEqual((sb.id, sb.status), ("job_sb", "RUNNING"))
        q, v, _ = client.requests[0]
        self.assertIn("createSandbox(input: $i)", q)
        self.assertEqual(v["i"], {"blueprint": "bp_1", "gpu": "H100", "cpu": 2, "memoryMiB": 4096,
                                  "timeoutSeconds": 600, "ports": [8888], "env": [{"name": "A", "value": "1"}],
                                  "queue": "interactive", "name": "nb"})
        self.assertEqual(len(client.requests), 4)
        with sb:
            pass
        self.assertIn("cancelJob(id: $id)", client.requests[-1][0])
        self.assertEqual(sb.status, "CANCELLED")

    def test_create_is_told_when_running(self):
        # Pushed: no polling of the job after the mutation.
        client = FakeClient(self.relay.url, {"createSandbox": job("PENDING", "PENDING")})
        client._http.events = [{"service": None, "status": "PENDING"}, {"service": "sandbox", "status": "RUNNING"},
                               {"service": None, "status": "RUNNING"}]
        client._http.complete = False  # the stream goes on while the job runs
        sb = levers9.Sandbox.create(image="img", client=client)
        self.assertEqual(sb.status, "RUNNING")
        self.assertTrue(sb._running())
        self.assertEqual([q for q, _, _ in client.requests if "node(" in q], [])
        self.assertEqual(client._http.requests, [("POST", "/graphql", True)])

    def test_create_told_of_the_end_raises_its_reason(self):
        client = FakeClient(self.relay.url, {"createSandbox": job("PENDING", "PENDING"),
                                             "node": job("ERROR", "ERROR", "image img: not found")})
        client._http.events = [{"service": None, "status": "PENDING"}, {"service": None, "status": "ERROR"}]
        with self.assertRaises(levers9.Error) as cm:
            levers9.Sandbox.create(image="img", client=client)
        self.assertIn("not found", str(cm.exception))

    def test_create_polls_when_the_push_drops(self):
        # The stream ends without completing, before the job runs: polled.
        client = FakeClient(self.relay.url, {"createSandbox": job("PENDING", "PENDING"),
                                             "node": [job("PENDING", "PENDING"), job("RUNNING")]})
        client._http.events, client._http.complete = [{"service": None, "status": "PENDING"}], False
        sb = levers9.Sandbox.create(image="img", client=client)
        self.assertEqual(sb.status, "RUNNING")
        self.assertEqual(len([q for q, _, _ in client.requests if "node(" in q]), 2)

    def test_create_builds_an_unbuilt_blueprint_and_raises_when_the_job_fails(self):
        client = FakeClient(self.relay.url, {"createSandbox": job("PENDING", "PENDING"),
                                             "node": job("ERROR", "ERROR", "image levers9-bp/t:k: not found")})
        built = []

        def build(bp, client=None, queue=None, project=None, **kw):
            built.append(queue)
            bp._set({"id": "bp_9", "state": "READY"})
            return bp

        with mock.patch.object(levers9.Blueprint, "build", build):
            with self.assertRaises(levers9.Error) as cm:
                levers9.Sandbox.create(blueprint=levers9.Blueprint.debian_slim(), queue="q", client=client)
        self.assertEqual(built, ["q"])
        self.assertIn("not found", str(cm.exception))
        self.assertEqual(client.requests[0][1]["i"]["blueprint"], "bp_9")
        with self.assertRaises(levers9.BadInput):
            levers9.Sandbox.create(blueprint=levers9.Blueprint.debian_slim(), image="x", client=client)
        with self.assertRaises(levers9.BadInput):
            levers9.Sandbox.create(image="x", ports=[0], client=client)

    def test_from_id_tunnels_snapshot(self):
        client = FakeClient(self.relay.url, {
            "node": [job("RUNNING"), {"tunnels": [{"port": 8888, "url": "/relay/job_sb/sandbox/8888/"},
                                                  {"port": 9000, "url": "https://x/relay/job_sb/sandbox/9000/"}]}]})
        sb = levers9.Sandbox.from_id("job_sb", client=client)
        self.assertEqual(sb.status, "RUNNING")
        t = sb.tunnels()
        self.assertEqual(t[8888], levers9.Tunnel(8888, self.relay.url + "/relay/job_sb/sandbox/8888/"))
        self.assertEqual(t[9000].url, "https://x/relay/job_sb/sandbox/9000/")
        client._http.answer = b'{"blueprint":{"id":"bp_s","key":"ks","image":"levers9-bp/t:ks","state":"READY"}}'
        snap = sb.snapshot()
        self.assertEqual((snap.id, snap.key, snap.state), ("bp_s", "ks", "READY"))
        self.assertEqual(client._http.requests[-1], ("POST", "/streams/snapshot/job_sb/sandbox", False))
        client = FakeClient(self.relay.url, {"node": None})
        with self.assertRaises(levers9.NotFound):
            levers9.Sandbox.from_id("job_x", client=client)

    # Exec

    def test_lines_arrive_before_the_process_ends(self):
        sb, _ = self.sandbox()
        p = sb.exec("lines")
        out = iter(p.stdout)
        self.assertEqual(next(out), "one")
        self.assertEqual(next(out), "two")
        self.assertIsNone(p.returncode)  # still running: the relay waits for go_on
        self.relay.go_on.set()
        self.assertEqual(list(out), ["thrée", "last without newline"])
        self.assertEqual(p.stderr.read(), "warn\n")
        self.assertEqual(p.wait(timeout=5), 0)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.relay.execs[0].path, "/streams/exec/job_sb/sandbox")
        self.assertEqual(self.relay.execs[0].conn.headers["authorization"], "Bearer tok")

    def test_exit_code_stderr_and_errors(self):
        sb, _ = self.sandbox()
        p = sb.exec("fail")
        self.assertEqual(p.wait(5), 3)
        self.assertEqual(p.stderr.read_bytes(), b"boom\n")
        self.assertEqual(p.stdout.read(), "")
        p = sb.exec("refused")
        with self.assertRaises(levers9.Error) as cm:
            p.wait(5)
        self.assertIn("executable file not found", str(cm.exception))
        p = sb.exec("cut")
        self.assertEqual(p.stdout.read(), "partial")
        with self.assertRaises(levers9.Error):
            p.wait(5)
        with self.assertRaises(levers9.BadInput):
            sb.exec()

    def test_stdin_and_query(self):
        sb, _ = self.sandbox()
        p = sb.exec("cat")
        p.stdin.write("héllo\n")
        self.assertEqual(p.stdout.readline(timeout=5), "héllo\n")
        big = bytes(range(256)) * 600  # over one frame's 32 KiB
        p.stdin.write(big)
        p.stdin.close()
        self.assertEqual(p.stdout.read_bytes(timeout=5), big)
        self.assertEqual(p.wait(5), 0)
        p = sb.exec("cat", stdin=b"given")
        self.assertEqual((p.stdout.read(), p.wait(5)), ("given", 0))
        p = sb.exec("sleep", tty=True)
        p.kill()
        self.assertEqual(p.wait(5), 137)
        self.assertEqual(self.relay.execs[-1].query, {"cmd": ["sleep"], "tty": ["1"]})
        with self.assertRaises(levers9.Error):
            p.stdin.write(b"late")

    def test_several_at_once(self):
        sb, _ = self.sandbox()
        procs = [sb.exec("cat") for _ in range(5)]
        for i, p in enumerate(procs):
            p.stdin.write(b"p%d\n" % i)
        for i, p in reversed(list(enumerate(procs))):
            self.assertEqual(p.stdout.readline(timeout=5), "p%d\n" % i)
            p.stdin.close()
            self.assertEqual(p.wait(5), 0)

    def test_wait_timeout(self):
        sb, _ = self.sandbox()
        p = sb.exec("sleep")
        with self.assertRaises(TimeoutError):
            p.wait(0.05)
        p.send_signal(15)
        self.assertEqual(p.wait(5), 143)

    def test_close_ends_the_reader_when_the_server_is_mute(self):
        sb, _ = self.sandbox()
        p = sb.exec("mute")
        t0 = time.monotonic()
        p.close(timeout=0.2)
        self.assertLess(time.monotonic() - t0, 2)
        self.assertFalse(p._reader.is_alive())
        self.assertTrue(p._ws.closed)
        with self.assertRaises(levers9.Error):
            p.wait(1)
        self.relay.go_on.set()

    # Files

    def test_files(self):
        sb, _ = self.sandbox()
        sb.files.write("/data/in.txt", b"data")
        self.assertEqual(self.relay.fs["/data/in.txt"], b"data")
        self.assertEqual(sb.files.read("/data/in.txt"), b"data")
        big = b"x" * 100000
        sb.files.write("/data/big", big)
        self.assertEqual(sb.files.read("/data/big"), big)
        sb.files.write("/data/t.txt", "text é")
        self.assertEqual(sb.files.read_text("/data/t.txt"), "text é")
        self.assertEqual(sb.files.ls("/data"), ["big", "in.txt", "t.txt"])
        sb.files.mkdir("/data/sub")
        self.assertIsNone(self.relay.fs["/data/sub"])
        with self.assertRaises(IsADirectoryError):
            sb.files.read("/data/sub")
        with self.assertRaises(FileNotFoundError) as cm:
            sb.files.read("/nope")
        self.assertEqual(cm.exception.filename, "/nope")
        self.assertIn("No such file", str(cm.exception))
        sb.files.remove("/data/big")
        self.assertNotIn("/data/big", self.relay.fs)
        with self.assertRaises(FileNotFoundError):
            sb.files.rm("/data/big")


class StreamReaderTest(unittest.TestCase):
    def test_lines_bytes_and_timeouts(self):
        r = sbmod.StreamReader("stdout")
        r._feed(b"a\r\nb")
        self.assertEqual(r.readline_bytes(), b"a\r\n")
        with self.assertRaises(TimeoutError):
            r.readline(timeout=0.01)
        threading.Timer(0.05, lambda: (r._feed(b"c\nd"), r._close())).start()
        self.assertEqual(list(r.lines(binary=True)), [b"bc", b"d"])
        self.assertEqual(r.read(), "")
        r = sbmod.StreamReader("stderr")
        r._feed(b"x")
        r._feed(b"y")
        r._close()
        self.assertEqual(list(r.chunks()), [b"xy"])


if __name__ == "__main__":
    unittest.main()

"""The realtime functions' WebSocket server, against a raw-socket client
written here (RFC 6455 by hand): handshake, text and binary echo, ping,
close, fragmented messages, refused frames and requests; then the runner
process serving a realtime function while it claims nothing."""

import asyncio
import base64
import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

import levers9
from levers9 import httpcall, realtime
from tests.test_functions_unit import SDK, UNIT_APP, FakeRunnerAPI, function_info

MASK = b"\x01\x02\x03\x04"


# Handlers (the runner subprocess imports echo from here).

async def echo(ws):
    await ws.send_text(json.dumps({"path": ws.path, "query": ws.query, "agent": ws.headers.get("user-agent")}))
    while True:
        try:
            msg = await ws.receive()
        except getattr(levers9, "WebSocketDisconnect", realtime.WebSocketDisconnect):
            return
        if msg == "close please":
            await ws.close(4000, "asked")
            return
        if msg == "boom":
            raise ValueError("boom")
        await ws.send(msg)


async def typed(ws):
    text = await ws.receive_text()
    data = await ws.receive_bytes()
    await ws.send_bytes(data + text.encode())
    await ws.send_text(text.upper())


def sync_handler(ws):
    return None


class Client:
    """A WebSocket client on a raw socket."""

    def __init__(self, port, path="/ws/room?user=ann&x=1", protocols=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET %s HTTP/1.1" % path, "Host: localhost", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
                 "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13", "User-Agent: raw-test"]
        if protocols:
            lines.append("Sec-WebSocket-Protocol: " + protocols)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("closed during the handshake: %r" % head)
            head += chunk
        self.status_line, *rest = head.decode().split("\r\n")
        self.headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in rest if line)}
        self.expected_accept = base64.b64encode(hashlib.sha1(key.encode() + realtime.GUID).digest()).decode()

    def send_frame(self, opcode, payload=b"", fin=True, mask=MASK):
        self.sock.sendall(realtime.frame(opcode, payload, fin, mask))

    def send_text(self, s):
        self.send_frame(realtime.OP_TEXT, s.encode())

    def recv_exactly(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed after %d of %d bytes" % (len(data), n))
            data += chunk
        return data

    def recv_frame(self):
        b0, b1 = self.recv_exactly(2)
        assert not b1 & 0x80, "server frames are never masked"
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self.recv_exactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self.recv_exactly(8))
        return bool(b0 & 0x80), b0 & 0x0F, self.recv_exactly(n)

    def recv_close(self):
        fin, op, data = self.recv_frame()
        assert op == realtime.OP_CLOSE, (op, data)
        code = struct.unpack("!H", data[:2])[0] if data else 1005
        return code, data[2:].decode()

    def eof(self):
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


class ServerTest(unittest.TestCase):
    def serve(self, handler):
        logs = []
        server = realtime.Server(handler, logs.append)
        port = httpcall.run(server.start("127.0.0.1", 0))
        self.addCleanup(lambda: httpcall.run(server.stop()))
        return server, port, logs

    def client(self, port, *args, **kwargs):
        c = Client(port, *args, **kwargs)
        self.addCleanup(c.close)
        return c

    def test_handshake_echo_ping_and_close(self):
        server, port, _ = self.serve(echo)
        c = self.client(port)
        self.assertEqual(c.status_line, "HTTP/1.1 101 Switching Protocols")
        self.assertEqual(c.headers["sec-websocket-accept"], c.expected_accept)
        self.assertEqual(c.headers["upgrade"].lower(), "websocket")
        # RFC 6455 1.3's own example.
        self.assertEqual(realtime.accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        _, op, data = c.recv_frame()
        self.assertEqual((op, json.loads(data)), (realtime.OP_TEXT, {"path": "/ws/room", "query": {"user": "ann", "x": "1"},
                                                                     "agent": "raw-test"}))
        self.assertEqual(server.open, 1)
        c.send_text("héllo")
        self.assertEqual(c.recv_frame(), (True, realtime.OP_TEXT, "héllo".encode()))
        c.send_frame(realtime.OP_BINARY, b"\x00\xff" * 40000)  # a 64-bit length
        self.assertEqual(c.recv_frame(), (True, realtime.OP_BINARY, b"\x00\xff" * 40000))
        c.send_frame(realtime.OP_BINARY, b"m" * 300)  # a 16-bit length
        self.assertEqual(c.recv_frame()[2], b"m" * 300)
        c.send_frame(realtime.OP_PING, b"are you there")
        self.assertEqual(c.recv_frame(), (True, realtime.OP_PONG, b"are you there"))
        c.send_frame(realtime.OP_CLOSE, struct.pack("!H", 1000) + b"bye")
        self.assertEqual(c.recv_close(), (1000, ""))
        self.assertTrue(c.eof())
        deadline = time.monotonic() + 5
        while server.open and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(server.open, 0)

    def test_fragmented_message_with_a_ping_inside(self):
        _, port, _ = self.serve(echo)
        c = self.client(port)
        c.recv_frame()
        c.send_frame(realtime.OP_TEXT, "frag".encode(), fin=False)
        c.send_frame(realtime.OP_PING, b"p")
        c.send_frame(realtime.OP_CONT, "men".encode(), fin=False)
        c.send_frame(realtime.OP_CONT, "té".encode(), fin=True)
        self.assertEqual(c.recv_frame(), (True, realtime.OP_PONG, b"p"))
        self.assertEqual(c.recv_frame(), (True, realtime.OP_TEXT, "fragmenté".encode()))

    def test_typed_receives(self):
        _, port, _ = self.serve(typed)
        c = self.client(port)
        c.send_text("abc")
        c.send_frame(realtime.OP_BINARY, b"\x01")
        self.assertEqual(c.recv_frame()[1:], (realtime.OP_BINARY, b"\x01abc"))
        self.assertEqual(c.recv_frame()[1:], (realtime.OP_TEXT, b"ABC"))
        self.assertEqual(c.recv_close(), (1000, ""))  # the handler returned

    def test_server_initiated_close_and_handler_errors(self):
        _, port, logs = self.serve(echo)
        c = self.client(port)
        c.recv_frame()
        c.send_text("close please")
        self.assertEqual(c.recv_close(), (4000, "asked"))
        c.send_frame(realtime.OP_CLOSE, struct.pack("!H", 4000))
        self.assertTrue(c.eof())
        c = self.client(port)
        c.recv_frame()
        c.send_text("boom")
        self.assertEqual(c.recv_close()[0], 1011)
        self.assertTrue(any("ValueError: boom" in line for line in logs), logs)

    def test_protocol_errors(self):
        _, port, _ = self.serve(echo)
        self.assertEqual(realtime.MAX_MESSAGE, 16 << 20)
        # The cap counts a message's frames together (checked at 1 MiB: 16 MiB takes long in pure Python).
        cap = mock.patch.object(realtime, "MAX_MESSAGE", 1 << 20)
        cap.start()
        self.addCleanup(cap.stop)
        cases = [
            ("unmasked", lambda c: c.send_frame(realtime.OP_TEXT, b"hi", mask=None), 1002),
            ("continuation first", lambda c: c.send_frame(realtime.OP_CONT, b"x"), 1002),
            ("new message inside one", lambda c: (c.send_frame(realtime.OP_TEXT, b"a", fin=False),
                                                  c.send_frame(realtime.OP_TEXT, b"b")), 1002),
            ("fragmented ping", lambda c: c.send_frame(realtime.OP_PING, b"x", fin=False), 1002),
            ("reserved bits", lambda c: c.sock.sendall(b"\xc1\x80" + MASK), 1002),
            ("bad opcode", lambda c: c.send_frame(0x3, b""), 1002),
            ("not UTF-8", lambda c: c.send_frame(realtime.OP_TEXT, b"\xff\xfe"), 1007),
            ("too large", lambda c: c.sock.sendall(b"\x82\xff" + struct.pack("!Q", 16 << 20 | 1)), 1009),
            ("too large in parts", lambda c: (c.send_frame(realtime.OP_BINARY, b"x" * (realtime.MAX_MESSAGE // 2 + 1),
                                                           fin=False),
                                              c.send_frame(realtime.OP_CONT, b"x" * (realtime.MAX_MESSAGE // 2 + 1))),
             1009),
            ("bad close code", lambda c: c.send_frame(realtime.OP_CLOSE, struct.pack("!H", 1005)), 1002),
        ]
        for name, send, code in cases:
            with self.subTest(name):
                c = self.client(port)
                c.recv_frame()
                send(c)
                self.assertEqual(c.recv_close()[0], code)
                self.assertTrue(c.eof())

    def test_refused_handshakes(self):
        _, port, _ = self.serve(echo)

        def raw(request):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            self.addCleanup(s.close)
            s.sendall(request.encode())
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    return data.decode()
                data += chunk

        plain = raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(plain.startswith("HTTP/1.1 426 Upgrade Required"), plain)
        self.assertIn("WebSocket only", plain)
        old = raw("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                  "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        self.assertIn("Sec-WebSocket-Version: 13", old)
        bad = raw("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\n"
                  "Sec-WebSocket-Version: 13\r\n\r\n")
        self.assertTrue(bad.startswith("HTTP/1.1 400"), bad)

    def test_subprotocol_and_stop(self):
        server, port, _ = self.serve(echo)
        c = self.client(port, protocols="chat, superchat")
        self.assertEqual(c.headers["sec-websocket-protocol"], "chat")
        c.recv_frame()
        stopping = threading.Thread(target=httpcall.run, args=(server.stop(1001),))
        stopping.start()
        self.assertEqual(c.recv_close()[0], 1001)
        c.send_frame(realtime.OP_CLOSE, struct.pack("!H", 1001))
        self.assertTrue(c.eof())
        stopping.join(10)
        self.assertFalse(stopping.is_alive())

    def test_a_slow_handler_holds_back_a_flooding_client(self):
        # A client sending faster than the handler receives: at most
        # MAX_QUEUED messages wait in memory, and none is lost.
        go, seen = threading.Event(), []

        async def slow(ws):
            seen.append(ws)
            while not go.is_set():
                await asyncio.sleep(0.01)
            for _ in range(200):
                await ws.send(await ws.receive())

        _, port, _ = self.serve(slow)
        c = self.client(port)
        sender = threading.Thread(target=lambda: [c.send_frame(realtime.OP_BINARY, b"%d" % i + b"x" * 4000)
                                                  for i in range(200)])
        sender.start()
        time.sleep(0.5)
        self.assertTrue(seen)
        self.assertLessEqual(seen[0]._inbox.qsize(), realtime.MAX_QUEUED)
        go.set()
        for i in range(200):
            self.assertEqual(c.recv_frame()[2], b"%d" % i + b"x" * 4000)
        sender.join(10)
        self.assertEqual(c.recv_close(), (1000, ""))

    def test_too_many_connections_are_refused(self):
        cap = mock.patch.object(realtime, "MAX_CONNECTIONS", 2)
        cap.start()
        self.addCleanup(cap.stop)
        server, port, _ = self.serve(echo)
        self.client(port).recv_frame()
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)  # a handshake that never comes
        self.addCleanup(idle.close)
        deadline = time.monotonic() + 5
        while server._sockets < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(self.client(port).status_line, "HTTP/1.1 503 Service Unavailable")
        idle.close()
        while server._sockets > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.client(port).recv_frame()

    def test_unmask(self):
        data = os.urandom(1001)
        self.assertEqual(realtime.unmask(data, MASK), bytes(b ^ MASK[i % 4] for i, b in enumerate(data)))
        self.assertEqual(realtime.unmask(b"", MASK), b"")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RunnerRealtimeTest(unittest.TestCase):
    def start(self, qualname):
        fake = FakeRunnerAPI(dict(function_info(qualname, module="tests.test_realtime"), kind="REALTIME"), [],
                             exit_when_done=False)
        self.addCleanup(fake.close)
        port = free_port()
        env = dict(os.environ, LEVERS9_RUNNER_SOCKET=fake.path, LEVERS9_RUNNER_PORT_WS=str(port),
                   PYTHONPATH=os.pathsep.join([SDK, UNIT_APP]), PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.Popen([sys.executable, "-m", "levers9.runner"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

        def stop():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.addCleanup(stop)
        return fake, proc, port

    def test_serves_websockets_and_claims_nothing_while_one_is_open(self):
        fake, proc, port = self.start("echo")
        deadline = time.monotonic() + 20
        while True:
            try:
                c = Client(port)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.05)
        self.addCleanup(c.close)
        c.recv_frame()
        c.send_text("hi")
        self.assertEqual(c.recv_frame()[2], b"hi")
        time.sleep(1.5)
        with fake.cond:
            claims = list(fake.claims)
        self.assertTrue(claims and claims[-1]["max"] == 0 and claims[-1]["waitMs"] == 0, claims[-3:])
        # Told to exit, it closes the open WebSockets (going away) and leaves.
        fake.exit_when_done = True
        self.assertEqual(c.recv_close()[0], 1001)
        c.send_frame(realtime.OP_CLOSE, struct.pack("!H", 1001))
        self.assertTrue(c.eof())
        self.assertEqual(proc.wait(20), 0)

    def test_a_sync_handler_is_refused(self):
        fake, proc, _ = self.start("sync_handler")
        out, _ = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 1, out)
        self.assertIn("must be an importable `async def handler(ws)`", out)


if __name__ == "__main__":
    unittest.main()

"""levers9.wsclient against a tiny WebSocket server in the test (a socket
and a thread per connection): handshake, masking, fragments, pings,
close, size limit, refusals as levers9 errors."""

import base64
import hashlib
import socket
import struct
import threading
import time
import unittest
from typing import Callable, Dict, List, Optional, Tuple

import levers9
from levers9 import errors, wsclient

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class ServerConn:
    """The server's side of one WebSocket: reads masked frames, writes
    unmasked ones."""

    def __init__(self, sock: socket.socket, path: str, headers: Dict[str, str], rest: bytes):
        self.sock = sock
        self.path = path
        self.headers = headers
        self.buf = bytearray(rest)
        self.lock = threading.Lock()

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError()
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def frame(self) -> Tuple[bool, int, bytes]:
        b0, b1 = self._read(2)
        assert b1 & 0x80, "client frames must be masked"
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._read(8))[0]
        mask = self._read(4)
        return bool(b0 & 0x80), b0 & 0x0F, wsclient.mask_bytes(self._read(n), mask)

    def message(self) -> Tuple[int, bytes]:
        """The next data message (opcode, payload); control frames are
        returned as they come."""
        parts: List[bytes] = []
        first = None
        while True:
            fin, op, payload = self.frame()
            if op >= 8:
                return op, payload
            first = op if first is None else first
            parts.append(payload)
            if fin:
                return first, b"".join(parts)

    def send(self, op: int, payload: bytes = b"", fin: bool = True) -> None:
        with self.lock:
            self.sock.sendall(wsclient.encode_frame(op, payload, fin=fin))

    def binary(self, data: bytes) -> None:
        self.send(wsclient.OP_BINARY, data)

    def close(self, code: int = 1000) -> None:
        """Sends a close and waits for the client's answer."""
        self.send(wsclient.OP_CLOSE, struct.pack("!H", code))
        try:
            while True:
                op, _ = self.message()
                if op == wsclient.OP_CLOSE:
                    break
        except (EOFError, OSError):
            pass


Handler = Callable[[ServerConn], None]


class FakeServer:
    """Accepts connections on 127.0.0.1 and runs handler(conn) for each
    WebSocket after checking the handshake; refuse(path, headers) may
    answer an HTTP status instead (returns (status, body) or None)."""

    def __init__(self, handler: Handler, token: Optional[str] = None,
                 refuse: Optional[Callable[[str, Dict[str, str]], Optional[Tuple[int, bytes]]]] = None,
                 bad_accept: bool = False):
        self.handler = handler
        self.token = token
        self.refuse = refuse
        self.bad_accept = bad_accept
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.errors: List[BaseException] = []
        self.paths: List[str] = []
        self._threads: List[threading.Thread] = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = sock.recv(4096)
                if not chunk:
                    return
                buf += chunk
            head, rest = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            self.paths.append(path)
            refusal = self.refuse(path, headers) if self.refuse else None
            if refusal is None and self.token and headers.get("authorization") != "Bearer " + self.token:
                refusal = (401, b'{"error":{"code":"UNAUTHENTICATED","message":"no token"}}')
            if refusal is not None:
                status, body = refusal
                sock.sendall(b"HTTP/1.1 %d Refused\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % (status, len(body)) + body)
                return
            assert method == "GET" and headers["upgrade"].lower() == "websocket"
            assert headers["sec-websocket-version"] == "13"
            key = headers["sec-websocket-key"]
            assert len(base64.b64decode(key)) == 16
            accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
            if self.bad_accept:
                accept = accept[::-1]
            sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
            self.handler(ServerConn(sock, path, headers, rest))
        except (EOFError, ConnectionError):
            pass
        except BaseException as e:  # reported by the test
            self.errors.append(e)
        finally:
            sock.close()

    def close(self) -> None:
        self.listener.close()
        for t in self._threads:
            t.join(5)


def echo(conn: ServerConn) -> None:
    """Echoes data messages until the client closes."""
    while True:
        op, payload = conn.message()
        if op == wsclient.OP_CLOSE:
            conn.send(wsclient.OP_CLOSE, payload)
            return
        if op in (wsclient.OP_TEXT, wsclient.OP_BINARY):
            conn.send(op, payload)


class WSClientTest(unittest.TestCase):

    def server(self, handler: Handler, **kw) -> FakeServer:
        s = FakeServer(handler, **kw)
        self.addCleanup(self._check, s)
        return s

    def _check(self, s: FakeServer) -> None:
        s.close()
        if s.errors:
            raise s.errors[0]

    def test_echo_text_binary_large(self):
        s = self.server(echo, token="tok")
        ws = wsclient.connect(s.url + "/streams/exec/job_1/sandbox?cmd=a&cmd=b", token="tok")
        ws.send_text("héllo")
        self.assertEqual(ws.recv(), "héllo")
        ws.send(b"\x00\x01\x02")
        self.assertEqual(ws.recv(), b"\x00\x01\x02")
        for n in (125, 126, 65535, 65536, 300000):
            data = bytes(range(256)) * (n // 256) + b"x" * (n % 256)
            ws.send_binary(data)
            self.assertEqual(ws.recv(), data)
        ws.close()
        self.assertTrue(ws.closed)
        self.assertEqual(s.paths, ["/streams/exec/job_1/sandbox?cmd=a&cmd=b"])

    def test_fragments_and_pings_inside(self):
        def handler(conn: ServerConn) -> None:
            conn.send(wsclient.OP_BINARY, b"ab", fin=False)
            conn.send(wsclient.OP_PING, b"p1")
            conn.send(wsclient.OP_CONT, b"cd", fin=False)
            conn.send(wsclient.OP_CONT, b"ef", fin=True)
            op, payload = conn.message()
            assert (op, payload) == (wsclient.OP_PONG, b"p1"), (op, payload)
            conn.send(wsclient.OP_TEXT, "é".encode()[:1], fin=False)
            conn.send(wsclient.OP_CONT, "é".encode()[1:], fin=True)
            conn.close(1000)

        s = self.server(handler)
        ws = wsclient.connect(s.url + "/x")
        self.assertEqual(ws.recv(), b"abcdef")
        self.assertEqual(ws.recv(), "é")
        with self.assertRaises(wsclient.ConnectionClosed) as cm:
            ws.recv()
        self.assertEqual(cm.exception.close_code, 1000)
        self.assertTrue(ws.closed)

    def test_max_message(self):
        def handler(conn: ServerConn) -> None:
            conn.send(wsclient.OP_BINARY, b"a" * 600, fin=False)
            conn.send(wsclient.OP_CONT, b"a" * 600, fin=True)
            op, payload = conn.message()
            assert op == wsclient.OP_CLOSE and struct.unpack("!H", payload[:2])[0] == 1009, (op, payload)

        s = self.server(handler)
        ws = wsclient.connect(s.url + "/x", max_message=1000)
        with self.assertRaises(wsclient.ProtocolError) as cm:
            ws.recv()
        self.assertEqual(cm.exception.close_code, 1009)

    def test_masked_server_frame_and_bad_text(self):
        def masked(conn: ServerConn) -> None:
            conn.sock.sendall(wsclient.encode_frame(wsclient.OP_BINARY, b"x", mask=b"abcd"))
            conn.message()

        s = self.server(masked)
        ws = wsclient.connect(s.url + "/x")
        with self.assertRaises(wsclient.ProtocolError) as cm:
            ws.recv()
        self.assertEqual(cm.exception.close_code, 1002)

        def bad_text(conn: ServerConn) -> None:
            conn.send(wsclient.OP_TEXT, b"\xff\xfe")
            conn.message()

        s2 = self.server(bad_text)
        ws = wsclient.connect(s2.url + "/x")
        with self.assertRaises(wsclient.ProtocolError) as cm:
            ws.recv()
        self.assertEqual(cm.exception.close_code, 1007)

    def test_refusals_are_levers9_errors(self):
        s = self.server(echo, token="tok")
        with self.assertRaises(levers9.Unauthenticated):
            wsclient.connect(s.url + "/x", token="wrong")

        s2 = self.server(echo, refuse=lambda p, h: (404, b'{"error":{"code":"NOT_FOUND","message":"no job"}}'))
        with self.assertRaises(levers9.NotFound) as cm:
            wsclient.connect(s2.url + "/x")
        self.assertIn("no job", str(cm.exception))

        s3 = self.server(echo, bad_accept=True)
        with self.assertRaises(wsclient.ProtocolError):
            wsclient.connect(s3.url + "/x")

    def test_unreachable(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        with self.assertRaises(errors.NetworkError):
            wsclient.connect("http://127.0.0.1:%d/x" % port, timeout=2)
        with self.assertRaises(errors.BadInput):
            wsclient.connect("ftp://example.com/x")

    def test_send_from_another_thread_while_reading(self):
        got = []

        def handler(conn: ServerConn) -> None:
            for i in range(50):
                op, payload = conn.message()
                got.append(payload)
                conn.binary(b"ack" + payload)
            conn.close()

        s = self.server(handler)
        ws = wsclient.connect(s.url + "/x")
        received = []

        def reader() -> None:
            try:
                while True:
                    received.append(ws.recv())
            except wsclient.ConnectionClosed:
                pass

        t = threading.Thread(target=reader)
        t.start()
        for i in range(50):
            ws.send_binary(b"%d" % i)
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual(received, [b"ack%d" % i for i in range(50)])

    def test_connection_dropped(self):
        def handler(conn: ServerConn) -> None:
            conn.binary(b"one")
            conn.sock.shutdown(socket.SHUT_RDWR)

        s = self.server(handler)
        ws = wsclient.connect(s.url + "/x")
        self.assertEqual(ws.recv(), b"one")
        with self.assertRaises(wsclient.ConnectionClosed) as cm:
            ws.recv()
        self.assertEqual(cm.exception.close_code, 1006)



if __name__ == "__main__":
    unittest.main()

"""A small synchronous WebSocket client (RFC 6455), standard library only.

What sandboxes' exec streams (/streams/exec) run over: one thread reads
(recv), any thread sends (writes are serialised by a lock). Pings are
answered while reading; a close from the server is echoed and ends recv
with ConnectionClosed. A refusal of the handshake (an HTTP answer other
than 101) raises the levers9.Error of the answer, as other requests do.
"""

import base64
import os
import socket
import ssl
import struct
import threading
import urllib.parse
from typing import Dict, Optional, Tuple, Union

from . import errors
# The frame grammar is the one the realtime server speaks (one copy).
from .realtime import (OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT,  # noqa: F401 (re-exported)
                       accept_key)
from .realtime import frame as encode_frame
from .realtime import unmask as mask_bytes
from .transport import USER_AGENT, error_from

MAX_MESSAGE = 16 << 20
MAX_HEADERS = 64 << 10
CLOSE_TIMEOUT = 5.0

Message = Union[str, bytes]


class ConnectionClosed(errors.NetworkError):
    """The WebSocket is closed: code and reason are the close frame's
    (1006 when the connection ended without one)."""

    def __init__(self, code: int = 1006, reason: str = ""):
        super().__init__("websocket closed (%d%s)" % (code, ": " + reason if reason else ""))
        self.close_code = code
        self.reason = reason


class ProtocolError(errors.NetworkError):
    """The server broke the protocol (the connection is closed with code)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.close_code = code


def _ws_url(url: str) -> Tuple[bool, str, int, str]:
    """(tls, host, port, path with query) of an http(s) or ws(s) URL."""
    u = urllib.parse.urlsplit(url)
    scheme = u.scheme.lower()
    if scheme not in ("http", "https", "ws", "wss"):
        raise errors.BadInput("%r is not an http(s) or ws(s) URL" % url, code="BAD_USER_INPUT", field="url")
    tls = scheme in ("https", "wss")
    if not u.hostname:
        raise errors.BadInput("%r names no host" % url, code="BAD_USER_INPUT", field="url")
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    return tls, u.hostname, u.port or (443 if tls else 80), path


class WebSocket:
    """A client WebSocket. Open one with :func:`connect`.

    recv() returns the next message (str for text, bytes for binary);
    send(), send_binary(), send_text() and ping() may be called from
    other threads while one thread is in recv().
    """

    def __init__(self, sock: socket.socket, leftover: bytes = b"", max_message: int = MAX_MESSAGE):
        self.sock = sock
        self.max_message = max_message
        self._buf = bytearray(leftover)
        self._wlock = threading.Lock()
        self._close_sent = False
        self._closed = False
        self.close_code: Optional[int] = None
        self.close_reason = ""

    # Sending

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        data = encode_frame(opcode, payload, mask=os.urandom(4))
        with self._wlock:
            if self._close_sent:
                raise ConnectionClosed(self.close_code or 1006, self.close_reason)
            if opcode == OP_CLOSE:
                self._close_sent = True
            try:
                self.sock.sendall(data)
            except OSError as e:
                self._closed = True
                raise ConnectionClosed(1006, str(e)) from None

    def send(self, message: Message) -> None:
        """Sends one message: text for a str, binary for bytes."""
        if isinstance(message, str):
            self._send_frame(OP_TEXT, message.encode("utf-8"))
        else:
            self._send_frame(OP_BINARY, bytes(message))

    def send_binary(self, data: bytes) -> None:
        self._send_frame(OP_BINARY, bytes(data))

    def send_text(self, text: str) -> None:
        self._send_frame(OP_TEXT, text.encode("utf-8"))

    def ping(self, data: bytes = b"") -> None:
        if len(data) > 125:
            raise ValueError("a ping carries at most 125 bytes")
        self._send_frame(OP_PING, data)

    # Receiving

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            try:
                chunk = self.sock.recv(max(65536, n - len(self._buf)))
            except socket.timeout:
                raise
            except OSError as e:
                self.abort()
                raise ConnectionClosed(1006, str(e)) from None
            if not chunk:
                self.abort()
                raise ConnectionClosed(1006, "connection ended without a close frame")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _frame(self) -> Tuple[bool, int, bytes]:
        b0, b1 = self._read(2)
        fin, opcode = bool(b0 & 0x80), b0 & 0x0F
        if b0 & 0x70:
            self._fail(1002, "a frame with reserved bits set (no extension was agreed)")
        if b1 & 0x80:
            self._fail(1002, "the server masked a frame")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._read(8))[0]
        if opcode >= 0x8:
            if n > 125 or not fin:
                self._fail(1002, "a control frame longer than 125 bytes or fragmented")
        elif opcode not in (OP_CONT, OP_TEXT, OP_BINARY):
            self._fail(1002, "unknown opcode %d" % opcode)
        if n > self.max_message:
            self._fail(1009, "a message larger than %d bytes" % self.max_message)
        return fin, opcode, self._read(n)

    def _fail(self, code: int, message: str) -> None:
        try:
            self._send_frame(OP_CLOSE, struct.pack("!H", code))
        except errors.Error:
            pass
        self.abort()
        raise ProtocolError(code, "websocket: " + message)

    def recv(self) -> Message:
        """The next message; raises ConnectionClosed once the connection
        is closed (after echoing the server's close)."""
        if self._closed:
            raise ConnectionClosed(self.close_code or 1006, self.close_reason)
        parts = []
        size = 0
        first = None
        while True:
            fin, opcode, payload = self._frame()
            if opcode == OP_PING:
                try:
                    self._send_frame(OP_PONG, payload)
                except ConnectionClosed:
                    pass
                continue
            if opcode == OP_PONG:
                continue
            if opcode == OP_CLOSE:
                code, reason = 1005, ""
                if len(payload) >= 2:
                    code = struct.unpack("!H", payload[:2])[0]
                    reason = payload[2:].decode("utf-8", "replace")
                self.close_code, self.close_reason = code, reason
                if not self._close_sent:
                    try:
                        self._send_frame(OP_CLOSE, payload[:2])
                    except ConnectionClosed:
                        pass
                self.abort()
                raise ConnectionClosed(code, reason)
            if opcode == OP_CONT:
                if first is None:
                    self._fail(1002, "a continuation frame outside a message")
            elif first is not None:
                self._fail(1002, "a new message inside a fragmented one")
            else:
                first = opcode
            size += len(payload)
            if size > self.max_message:
                self._fail(1009, "a message larger than %d bytes" % self.max_message)
            parts.append(payload)
            if fin:
                data = b"".join(parts)
                if first == OP_TEXT:
                    try:
                        return data.decode("utf-8")
                    except UnicodeDecodeError:
                        self._fail(1007, "a text message that is not UTF-8")
                return data

    # Closing

    def close(self, code: int = 1000, reason: str = "", wait: bool = True, timeout: float = CLOSE_TIMEOUT) -> None:
        """Sends a close frame; with wait, reads (dropping messages) until
        the server's close answers it or timeout passes, then closes the
        socket. Use wait=False while another thread is in recv(): it sees
        the answer and closes the socket."""
        if self._closed:
            return
        try:
            self._send_frame(OP_CLOSE, struct.pack("!H", code) + reason.encode("utf-8")[:123])
        except ConnectionClosed:
            self.abort()
            return
        if not wait:
            return
        try:
            self.sock.settimeout(timeout)
            while True:
                self.recv()
        except (errors.Error, OSError):
            pass
        finally:
            self.abort()

    def abort(self) -> None:
        """Closes the socket at once."""
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "WebSocket":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(url: str, token: Optional[str] = None, headers: Optional[Dict[str, str]] = None,
            timeout: float = 30.0, max_message: int = MAX_MESSAGE,
            ssl_context: Optional[ssl.SSLContext] = None) -> WebSocket:
    """Opens a WebSocket to url (http, https, ws or wss), with token as
    Authorization: Bearer. timeout bounds the connect and the handshake;
    the open WebSocket blocks in recv() for as long as it takes."""
    tls, host, port, path = _ws_url(url)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise errors.NetworkError("reaching %s:%d: %s" % (host, port, e)) from None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls:
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        default_port = 443 if tls else 80
        h = {"Host": host if port == default_port else "%s:%d" % (host, port), "Upgrade": "websocket",
             "Connection": "Upgrade", "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
             "User-Agent": USER_AGENT}
        if token:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        req = "GET %s HTTP/1.1\r\n%s\r\n" % (path, "".join("%s: %s\r\n" % kv for kv in h.items()))
        sock.sendall(req.encode("latin-1"))
        status, reason, resp_headers, rest = _read_response(sock)
        if status != 101:
            body = _read_body(sock, resp_headers, rest)
            raise error_from(status, reason, body)
        if resp_headers.get("upgrade", "").lower() != "websocket" or \
                "upgrade" not in resp_headers.get("connection", "").lower():
            raise ProtocolError(1002, "websocket: the server did not upgrade the connection")
        if resp_headers.get("sec-websocket-accept", "") != accept_key(key):
            raise ProtocolError(1002, "websocket: wrong Sec-WebSocket-Accept in the server's answer")
        sock.settimeout(None)
        return WebSocket(sock, rest, max_message)
    except BaseException as e:
        sock.close()
        if isinstance(e, (socket.timeout, OSError)) and not isinstance(e, errors.Error):
            raise errors.NetworkError("websocket handshake with %s:%d: %s" % (host, port, e)) from None
        raise


def _read_response(sock: socket.socket) -> Tuple[int, str, Dict[str, str], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEADERS:
            raise ProtocolError(1002, "websocket: the server's answer has over 64 KiB of headers")
        chunk = sock.recv(4096)
        if not chunk:
            raise errors.NetworkError("websocket: the server closed the connection during the handshake")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ProtocolError(1002, "websocket: not an HTTP answer: %.80r" % lines[0])
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        k = k.strip().lower()
        headers[k] = (headers[k] + ", " + v.strip()) if k in headers else v.strip()
    return int(parts[1]), parts[2] if len(parts) > 2 else "", headers, rest


def _read_body(sock: socket.socket, headers: Dict[str, str], rest: bytes, limit: int = 1 << 20) -> bytes:
    """An error answer's body (for its message), up to limit bytes."""
    try:
        n = int(headers.get("content-length", "-1"))
    except ValueError:
        n = -1
    sock.settimeout(5.0)
    buf = rest
    try:
        while len(buf) < limit and (n < 0 or len(buf) < n):
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    except OSError:
        pass
    return buf[:n] if n >= 0 else buf[:limit]

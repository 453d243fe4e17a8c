"""WebSockets for REALTIME functions, with the standard library only.

The runner of a REALTIME function serves WebSockets (RFC 6455) on
0.0.0.0:$LEVERS9_RUNNER_PORT_WS (default 8000) and calls the function,
``async def handler(ws)``, once per connection::

    @app.realtime()
    async def echo(ws):
        while True:
            try:
                msg = await ws.receive()      # str or bytes
            except levers9.WebSocketDisconnect:
                return
            await ws.send(msg)

Client frames must be masked; messages may be fragmented; pings are
answered; a message is at most 16 MiB (larger: closed with 1009). When
the handler returns, the connection is closed with 1000 (1011 when it
raised). At most MAX_QUEUED messages wait for the handler's receive():
beyond them the server reads no more from that client (TCP back-pressure)
until the handler catches up or the connection closes.
"""

import asyncio
import base64
import hashlib
import os
import struct
import time
import traceback
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_MESSAGE = 16 << 20
MAX_HEADERS = 64 << 10
MAX_QUEUED = 16
MAX_CONNECTIONS = 1000  # open or in their handshake; beyond: 503
HANDSHAKE_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0
DEFAULT_PORT = 8000

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

# Close codes a peer may send (RFC 6455 7.4: 1004-1006 and 1015 are never
# on the wire; 3000-4999 are the applications').
_SENDABLE = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}


class WebSocketDisconnect(Exception):
    """The connection closed: receive() and send() raise it. code is the
    close code (1005: none given, 1006: closed without a close frame)."""

    def __init__(self, code: int = 1000, reason: str = ""):
        super().__init__("the WebSocket closed (%d%s)" % (code, ": " + reason if reason else ""))
        self.code = code
        self.reason = reason


class ProtocolError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + GUID).digest()).decode("ascii")


def unmask(data: bytes, mask: bytes) -> bytes:
    """XORs data with the 4-byte mask, as one big integer (fast)."""
    if not data:
        return data
    n = len(data)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


def frame(opcode: int, payload: bytes = b"", fin: bool = True, mask: Optional[bytes] = None) -> bytes:
    """One frame (the server's are unmasked; tests mask theirs)."""
    head = bytearray([(0x80 if fin else 0) | opcode])
    m = 0x80 if mask is not None else 0
    n = len(payload)
    if n < 126:
        head.append(m | n)
    elif n < 1 << 16:
        head.append(m | 126)
        head += struct.pack("!H", n)
    else:
        head.append(m | 127)
        head += struct.pack("!Q", n)
    if mask is not None:
        head += mask
        payload = unmask(payload, mask)
    return bytes(head) + payload


Message = Union[str, bytes]


class WebSocket:
    """One connection, as the handler sees it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, query: str,
                 headers: List[Tuple[str, str]], subprotocol: Optional[str] = None):
        self._reader = reader
        self._writer = writer
        self.path = path
        #: The query parameters (the last of a repeated name wins).
        self.query: Dict[str, str] = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        self.query_string = query
        #: Request headers by lower-cased name (repeated ones joined by ", ").
        self.headers = _joined(headers)
        self.subprotocol = subprotocol
        self._inbox: "asyncio.Queue[Optional[Message]]" = asyncio.Queue()
        self._send_lock = asyncio.Lock()
        self._close_sent = False
        self._close_received = asyncio.Event()
        self._room = asyncio.Event()  # set when the inbox drained below MAX_QUEUED or a close went out
        self.close_code: Optional[int] = None
        self.close_reason = ""

    # The handler's API

    async def receive(self) -> Message:
        """The next message: str (text) or bytes (binary)."""
        if self._close_received.is_set() and self._inbox.empty():
            raise WebSocketDisconnect(self.close_code or 1006, self.close_reason)
        msg = await self._inbox.get()
        self._room.set()
        if msg is None:
            self._inbox.put_nowait(None)  # every later receive raises too
            raise WebSocketDisconnect(self.close_code or 1006, self.close_reason)
        return msg

    async def receive_text(self) -> str:
        msg = await self.receive()
        if not isinstance(msg, str):
            raise TypeError("received a binary message where text was expected")
        return msg

    async def receive_bytes(self) -> bytes:
        msg = await self.receive()
        if not isinstance(msg, bytes):
            raise TypeError("received a text message where binary was expected")
        return msg

    async def send(self, data: Message) -> None:
        if isinstance(data, str):
            await self.send_text(data)
        elif isinstance(data, (bytes, bytearray, memoryview)):
            await self.send_bytes(bytes(data))
        else:
            raise TypeError("ws.send takes str or bytes, not %s" % type(data).__name__)

    async def send_text(self, s: str) -> None:
        await self._send(OP_TEXT, s.encode("utf-8"))

    async def send_bytes(self, b: bytes) -> None:
        await self._send(OP_BINARY, bytes(b))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Sends a close frame and waits (up to CLOSE_TIMEOUT) for the
        client's, then drops the connection."""
        await self._send_close(code, reason)
        try:
            await asyncio.wait_for(self._close_received.wait(), CLOSE_TIMEOUT)
        except asyncio.TimeoutError:
            pass
        self._abort()

    # Internals

    async def _send(self, opcode: int, payload: bytes) -> None:
        if self._close_sent or self._writer.is_closing():
            raise WebSocketDisconnect(self.close_code or 1006, self.close_reason)
        async with self._send_lock:
            try:
                self._writer.write(frame(opcode, payload))
                await self._writer.drain()
            except (ConnectionError, OSError):
                raise WebSocketDisconnect(1006) from None

    async def _send_close(self, code: int, reason: str = "") -> None:
        if self._close_sent:
            return
        self._close_sent = True
        self._room.set()  # the read loop waits for the client's close, not for the handler
        payload = b"" if code == 1005 else struct.pack("!H", code) + reason.encode("utf-8")[:123]
        async with self._send_lock:
            try:
                self._writer.write(frame(OP_CLOSE, payload))
                await self._writer.drain()
            except (ConnectionError, OSError):
                pass

    def _abort(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()

    def _closed(self, code: int, reason: str = "") -> None:
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        self._close_received.set()
        self._inbox.put_nowait(None)

    async def _read_frame(self) -> Tuple[bool, int, bytes]:
        b0, b1 = await self._reader.readexactly(2)
        fin, rsv, opcode = bool(b0 & 0x80), b0 & 0x70, b0 & 0x0F
        masked, n = bool(b1 & 0x80), b1 & 0x7F
        if rsv:
            raise ProtocolError(1002, "reserved bits set (no extension was agreed)")
        if not masked:
            raise ProtocolError(1002, "client frames must be masked")
        if opcode >= 0x8:
            if not fin or n > 125:
                raise ProtocolError(1002, "a control frame must be final and at most 125 bytes")
            if opcode not in (OP_CLOSE, OP_PING, OP_PONG):
                raise ProtocolError(1002, "unknown opcode %#x" % opcode)
        elif opcode not in (OP_CONT, OP_TEXT, OP_BINARY):
            raise ProtocolError(1002, "unknown opcode %#x" % opcode)
        if n == 126:
            (n,) = struct.unpack("!H", await self._reader.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", await self._reader.readexactly(8))
            if n >> 63:
                raise ProtocolError(1002, "a frame length must not set its top bit")
        if n > MAX_MESSAGE:
            raise ProtocolError(1009, "a message is at most %d bytes" % MAX_MESSAGE)
        mask = await self._reader.readexactly(4)
        return fin, opcode, unmask(await self._reader.readexactly(n), mask)

    async def _read_loop(self) -> None:
        """Reads frames into messages until the connection closes; answers
        pings and the close handshake itself."""
        parts: List[bytes] = []
        size = 0
        kind = 0
        try:
            while True:
                while self._inbox.qsize() >= MAX_QUEUED and not self._close_sent:
                    self._room.clear()
                    await self._room.wait()
                fin, opcode, data = await self._read_frame()
                if opcode == OP_PING:
                    if not self._close_sent:
                        async with self._send_lock:
                            self._writer.write(frame(OP_PONG, data))
                            await self._writer.drain()
                    continue
                if opcode == OP_PONG:
                    continue
                if opcode == OP_CLOSE:
                    code, reason = _close_payload(data)
                    self._closed(code, reason)
                    await self._send_close(1000 if code == 1005 else code)
                    return
                if opcode == OP_CONT:
                    if not kind:
                        raise ProtocolError(1002, "a continuation frame without a message to continue")
                elif kind:
                    raise ProtocolError(1002, "a new message began before the last one ended")
                else:
                    kind = opcode
                size += len(data)
                if size > MAX_MESSAGE:
                    raise ProtocolError(1009, "a message is at most %d bytes" % MAX_MESSAGE)
                parts.append(data)
                if not fin:
                    continue
                body = b"".join(parts)
                parts, size, op, kind = [], 0, kind, 0
                if op == OP_TEXT:
                    try:
                        self._inbox.put_nowait(body.decode("utf-8"))
                    except UnicodeDecodeError:
                        raise ProtocolError(1007, "a text message is not UTF-8") from None
                else:
                    self._inbox.put_nowait(body)
        except ProtocolError as e:
            self._closed(e.code, str(e))
            await self._send_close(e.code, str(e))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            self._closed(1006)
        finally:
            self._close_received.set()
            self._inbox.put_nowait(None)
            if self._close_sent:
                self._abort()  # the server closes TCP first (RFC 6455 7.1.1)


def _joined(headers: List[Tuple[str, str]]) -> Dict[str, str]:
    """Headers by name, a repeated one's values joined by ", "."""
    h: Dict[str, str] = {}
    for k, v in headers:
        h[k] = h[k] + ", " + v if k in h else v
    return h


def _close_payload(data: bytes) -> Tuple[int, str]:
    if not data:
        return 1005, ""
    if len(data) == 1:
        raise ProtocolError(1002, "a close frame with a one-byte body")
    (code,) = struct.unpack("!H", data[:2])
    if code not in _SENDABLE and not 3000 <= code <= 4999:
        raise ProtocolError(1002, "close code %d is not allowed on the wire" % code)
    try:
        return code, data[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(1007, "a close reason is not UTF-8") from None


Handler = Callable[[WebSocket], Any]


class Server:
    """Serves handler on every WebSocket connection; counts the open ones
    (the runner must not leave while one is open)."""

    def __init__(self, handler: Handler, log: Callable[[str], None] = print):
        self.handler = handler
        self.log = log
        self.open = 0
        self.last_closed = time.monotonic()
        self.connections: "set[WebSocket]" = set()
        self._sockets = 0  # accepted TCP connections, handshaking or open
        self.server: Optional[asyncio.AbstractServer] = None

    async def start(self, host: str = "0.0.0.0", port: int = DEFAULT_PORT) -> int:
        """Listens; returns the port (port 0: a free one)."""
        self.server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEADERS)
        return self.server.sockets[0].getsockname()[1]

    async def stop(self, code: int = 1001) -> None:
        """Stops listening and closes every connection with code (going away)."""
        if self.server is not None:
            self.server.close()
        await asyncio.gather(*(ws.close(code, "the server is leaving") for ws in list(self.connections)),
                             return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._sockets >= MAX_CONNECTIONS:
            try:
                await asyncio.wait_for(_refuse(writer, 503, "too many connections"), HANDSHAKE_TIMEOUT)
            except (asyncio.TimeoutError, ConnectionError, OSError):
                writer.close()
            return
        self._sockets += 1
        try:
            await self._serve_one(reader, writer)
        finally:
            self._sockets -= 1

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            ws = await asyncio.wait_for(self._handshake(reader, writer), HANDSHAKE_TIMEOUT)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError, ValueError,
                asyncio.LimitOverrunError):
            writer.close()
            return
        if ws is None:
            return
        self.open += 1
        self.connections.add(ws)
        reading = asyncio.ensure_future(ws._read_loop())
        try:
            await self.handler(ws)
            code = 1000
        except WebSocketDisconnect:
            code = 1000
        except Exception:
            self.log("levers9 runner: the WebSocket handler raised:\n%s" % traceback.format_exc().rstrip())
            code = 1011
        finally:
            self.connections.discard(ws)
        try:
            await ws.close(code)
            reading.cancel()
        finally:
            self.open -= 1
            self.last_closed = time.monotonic()

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Optional[WebSocket]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _refuse(writer, 400, "not an HTTP/1.1 request")
            return None
        method, target = parts[0], parts[1]
        headers: List[Tuple[str, str]] = []
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep:
                await _refuse(writer, 400, "a header line without a colon")
                return None
            headers.append((name.strip().lower(), value.strip()))
        h = _joined(headers)
        tokens = lambda s: {t.strip().lower() for t in s.split(",")}  # noqa: E731
        if method != "GET" or "websocket" not in tokens(h.get("upgrade", "")) or \
                "upgrade" not in tokens(h.get("connection", "")):
            await _refuse(writer, 426, "this endpoint speaks WebSocket only", [("Upgrade", "websocket")])
            return None
        if h.get("sec-websocket-version") != "13":
            await _refuse(writer, 426, "WebSocket version 13 only", [("Sec-WebSocket-Version", "13")])
            return None
        key = h.get("sec-websocket-key", "")
        try:
            if len(base64.b64decode(key, validate=True)) != 16:
                raise ValueError(key)
        except ValueError:
            await _refuse(writer, 400, "a bad Sec-WebSocket-Key")
            return None
        offered = [p.strip() for p in h.get("sec-websocket-protocol", "").split(",") if p.strip()]
        sub = offered[0] if offered else None  # browsers fail a handshake that picks none of theirs
        resp = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                "Sec-WebSocket-Accept: " + accept_key(key)]
        if sub:
            resp.append("Sec-WebSocket-Protocol: " + sub)
        writer.write(("\r\n".join(resp) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        u = urllib.parse.urlsplit(target)
        return WebSocket(reader, writer, urllib.parse.unquote(u.path) or "/", u.query, headers, sub)


async def _refuse(writer: asyncio.StreamWriter, status: int, message: str,
                  extra: Optional[List[Tuple[str, str]]] = None) -> None:
    reasons = {400: "Bad Request", 426: "Upgrade Required", 503: "Service Unavailable"}
    body = (message + "\n").encode("utf-8")
    lines = ["HTTP/1.1 %d %s" % (status, reasons.get(status, "Error")), "Content-Type: text/plain; charset=utf-8",
             "Content-Length: %d" % len(body), "Connection: close"] + ["%s: %s" % kv for kv in extra or []]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    try:
        await writer.drain()
    finally:
        writer.close()


def port() -> int:
    return int(os.environ.get("LEVERS9_RUNNER_PORT_WS") or DEFAULT_PORT)

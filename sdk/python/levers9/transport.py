"""HTTP with retries: the one place requests leave the SDK.

A request that never reached the server (connection refused) is always
retried. Any other transient failure (a reset connection, a timeout, a
502/503/504, ``RATE_LIMITED``) is retried only for idempotent requests:
queries, downloads, listings, and mutations made safe by an idempotency
key. Others raise at once, so a mutation is never run twice by accident.
"""

import http.client
import json
import random
import select
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from typing import Any, Dict, Optional

from . import errors

_TRANSIENT_STATUS = {502, 503, 504}
USER_AGENT = "levers9-python/0.1"


class Transport:
    """Sends requests to one server with one token."""

    def __init__(self, server: str, token: str, timeout: float = 30.0, retries: int = 4,
                 backoff: float = 0.25):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._opener = urllib.request.build_opener()
        u = urllib.parse.urlsplit(self.server)
        self._scheme, self._host, self._port, self._prefix = u.scheme, u.hostname, u.port, u.path.rstrip("/")
        # Small requests reuse one connection per thread, unless a proxy
        # from the environment applies (urllib honours those; http.client
        # does not).
        proxies = urllib.request.getproxies()
        self._keep_alive = self._scheme not in proxies or bool(urllib.request.proxy_bypass(u.netloc))
        self._local = threading.local()
        self._conns: "weakref.WeakSet[http.client.HTTPConnection]" = weakref.WeakSet()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Closes the kept-alive connections of every thread."""
        with self._lock:
            conns = list(self._conns)
            self._conns.clear()
        for conn in conns:
            conn.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to do
            pass

    def request(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None,
                idempotent: bool = True, timeout: Optional[float] = None, auth: bool = True):
        """Sends one request and returns the open response (status < 300).

        body is bytes or a file object (streamed; set Content-Length in
        headers). Error answers raise the matching levers9.Error; failures
        to reach the server raise NetworkError after the retries allowed.
        """
        if auth and not self.token:
            raise errors.Unauthenticated(
                "no API token: run levers9 login, pass token=... or set LEVERS9_TOKEN", code="UNAUTHENTICATED")
        start = body.tell() if hasattr(body, "seek") and hasattr(body, "tell") else None
        attempt = 0
        while True:
            req = urllib.request.Request(self.server + path, data=body, method=method)
            req.add_header("User-Agent", USER_AGENT)
            if auth:
                req.add_header("Authorization", "Bearer " + self.token)
            for k, v in (headers or {}).items():
                req.add_header(k, v)
            retry_ok = idempotent and (body is None or isinstance(body, bytes) or start is not None)
            try:
                return self._opener.open(req, timeout=timeout or self.timeout)
            except urllib.error.HTTPError as e:
                err = error_of(e)
                transient = e.code in _TRANSIENT_STATUS or isinstance(err, errors.RateLimited)
                if not transient or not retry_ok or attempt >= self.retries:
                    raise err from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                reason = getattr(e, "reason", e)
                never_sent = isinstance(reason, ConnectionRefusedError)
                if not (never_sent or retry_ok) or attempt >= self.retries:
                    raise errors.NetworkError("reaching %s: %s" % (self.server, reason)) from None
            attempt += 1
            if start is not None:
                body.seek(start)
            time.sleep(min(5.0, self.backoff * (2 ** (attempt - 1))) * (0.5 + random.random()))


    def fetch(self, method: str, path: str, body: Optional[bytes] = None,
              headers: Optional[Dict[str, str]] = None, idempotent: bool = True, auth: bool = True) -> bytes:
        """Like request, for small answers read whole (GraphQL): over a
        kept-alive connection, with the same rules for retries."""
        if not self._keep_alive:
            with self.request(method, path, body, headers, idempotent=idempotent, auth=auth) as resp:
                return resp.read()
        if auth and not self.token:
            raise errors.Unauthenticated(
                "no API token: run levers9 login, pass token=... or set LEVERS9_TOKEN", code="UNAUTHENTICATED")
        h = {"User-Agent": USER_AGENT}
        if auth:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        attempt = 0
        while True:
            conn = self._conn()
            try:
                conn.request(method, self._prefix + path, body=body, headers=h)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                never_sent = isinstance(e, ConnectionRefusedError)
                if not (never_sent or idempotent) or attempt >= self.retries:
                    raise errors.NetworkError("reaching %s: %s" % (self.server, e)) from None
            else:
                if resp.will_close:
                    self._drop()
                if resp.status < 300:
                    return raw
                err = error_from(resp.status, resp.reason, raw)
                transient = resp.status in _TRANSIENT_STATUS or isinstance(err, errors.RateLimited)
                if not transient or not idempotent or attempt >= self.retries:
                    raise err
            attempt += 1
            time.sleep(min(5.0, self.backoff * (2 ** (attempt - 1))) * (0.5 + random.random()))

    def _conn(self) -> http.client.HTTPConnection:
        """This thread's connection; a new one when the server closed the
        last (an idle connection it closed reads as ready: EOF)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            self._drop()
            conn = None
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                self._conns.add(conn)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None


def error_of(e: urllib.error.HTTPError) -> errors.Error:
    """Turns an error answer (GraphQL or files API JSON) into an exception."""
    try:
        raw = e.read(1 << 20)
    except (OSError, http.client.HTTPException, socket.timeout):
        raw = b""
    finally:
        e.close()
    return error_from(e.code, e.reason, raw)


def error_from(status: int, reason: str, raw: bytes) -> errors.Error:
    """The exception for an error answer's status and body."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        if doc.get("errors"):
            return errors.from_graphql(doc["errors"][0], status=status)
        fe = doc.get("error")
        if isinstance(fe, dict):
            return errors.from_server(fe.get("message", ""), fe.get("code"), status=status)
    code = {401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND", 429: "RATE_LIMITED"}.get(status)
    return errors.from_server("the server answered %d %s" % (status, reason), code, status=status)

"""HTTP with retries: the one place requests leave the SDK.

A request that never reached the server (connection refused) is always
retried. Any other transient failure (a reset connection, a timeout, a
502/503/504, ``RATE_LIMITED``) is retried only for idempotent requests:
queries, downloads, listings, and mutations made safe by an idempotency
key. Others raise at once, so a mutation is never run twice by accident.

An answer that says when to come back (``Retry-After``: the 503 of a
server whose database is restarting, a 429) is retried no sooner than
that, for up to ``retry_window`` seconds from the first try; other
failures ``retries`` times.
"""

import datetime
import email.utils
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
# The longest wait between two tries, whatever the server asks: a server
# back sooner than it said is used sooner.
_MAX_WAIT = 10.0


class Transport:
    """Sends requests to one server with one token."""

    def __init__(self, server: str, token: str, timeout: float = 30.0, retries: int = 4,
                 backoff: float = 0.25, retry_window: float = 60.0):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.retry_window = retry_window
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
        attempt, began = 0, time.monotonic()
        while True:
            retry_after = None
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
                retry_after = _retry_after(e.headers.get("Retry-After") if e.headers else None)
                err = error_of(e)
                transient = e.code in _TRANSIENT_STATUS or isinstance(err, errors.RateLimited)
                if not transient or not retry_ok or not self._pause(attempt + 1, began, retry_after):
                    raise err from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                reason = getattr(e, "reason", e)
                never_sent = isinstance(reason, ConnectionRefusedError)
                if not (never_sent or retry_ok) or not self._pause(attempt + 1, began, None):
                    raise errors.NetworkError("reaching %s: %s" % (self.server, reason)) from None
            attempt += 1
            if start is not None:
                body.seek(start)


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
        attempt, began = 0, time.monotonic()
        while True:
            conn = self._conn()
            try:
                conn.request(method, self._prefix + path, body=body, headers=h)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                never_sent = isinstance(e, ConnectionRefusedError)
                if not (never_sent or idempotent) or not self._pause(attempt + 1, began, None):
                    raise errors.NetworkError("reaching %s: %s" % (self.server, e)) from None
            else:
                if resp.will_close:
                    self._drop()
                if resp.status < 300:
                    return raw
                err = error_from(resp.status, resp.reason, raw)
                transient = resp.status in _TRANSIENT_STATUS or isinstance(err, errors.RateLimited)
                retry_after = _retry_after(resp.getheader("Retry-After"))
                if not transient or not idempotent or not self._pause(attempt + 1, began, retry_after):
                    raise err
            attempt += 1

    def _pause(self, attempt: int, began: float, retry_after: Optional[float]) -> bool:
        """Waits before try number attempt + 1 and returns True, or returns
        False when there is to be none. A failure the server explained with
        a Retry-After is retried no sooner than it asked, while the next
        try starts within retry_window of the first; any other, retries
        times, backing off. Waits are capped at _MAX_WAIT and jittered, so
        that clients refused together do not come back together."""
        if self.retries <= 0:
            return False
        if retry_after is None:
            if attempt > self.retries:
                return False
            wait = min(_MAX_WAIT / 2, self.backoff * (2 ** (attempt - 1))) * (0.5 + random.random())
        else:
            wait = min(_MAX_WAIT, max(retry_after, self.backoff) * (1 + random.random() / 2))
            if time.monotonic() - began + wait > self.retry_window:
                return False
        time.sleep(wait)
        return True

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


def _retry_after(value: Optional[str]) -> Optional[float]:
    """The seconds a Retry-After header asks for (a number, or an HTTP
    date), None when there is none or it cannot be read."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


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

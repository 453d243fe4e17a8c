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
import socket
import time
import urllib.error
import urllib.request
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


def error_of(e: urllib.error.HTTPError) -> errors.Error:
    """Turns an error answer (GraphQL or files API JSON) into an exception."""
    try:
        raw = e.read(1 << 20)
    except (OSError, http.client.HTTPException, socket.timeout):
        raw = b""
    finally:
        e.close()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        if doc.get("errors"):
            return errors.from_graphql(doc["errors"][0], status=e.code)
        fe = doc.get("error")
        if isinstance(fe, dict):
            return errors.from_server(fe.get("message", ""), fe.get("code"), status=e.code)
    code = {401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND", 429: "RATE_LIMITED"}.get(e.code)
    return errors.from_server("the server answered %d %s" % (e.code, e.reason), code, status=e.code)

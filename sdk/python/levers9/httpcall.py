"""HTTP-made calls in the runner: the request and response envelopes, and
how each kind of function answers one.

A call made over HTTP (source HTTP) carries no pickle: its arguments are
the JSON request envelope ::

    {"method": "POST", "path": "/rest", "query": "a=1",
     "headers": [["content-type", "application/json"]], "body": "<base64>"}

(optional: "rootPath", the URL prefix an ASGI app is mounted at, and
"scheme") and its result is the JSON response envelope ::

    {"status": 200, "headers": [["content-type", "application/json"]], "body": "<base64>"}

A request the function cannot take (a body that is not JSON, arguments
that do not fit its signature) is the caller's error: it is answered 400
as a COMPLETE call, not failed as the function's.
"""

import asyncio
import base64
import functools
import inspect
import json
import threading
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Tuple

Headers = List[Tuple[str, str]]


class Request:
    """A decoded request envelope."""

    def __init__(self, method: str = "GET", path: str = "/", query: str = "", headers: Optional[Headers] = None,
                 body: bytes = b"", root_path: str = "", scheme: str = "http"):
        self.method = method.upper()
        self.path = path or "/"
        self.query = query or ""
        self.headers: Headers = [(k.lower(), v) for k, v in (headers or [])]
        self.body = body
        self.root_path = root_path or ""
        self.scheme = scheme or "http"

    def header(self, name: str, default: str = "") -> str:
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return default

    def params(self) -> Dict[str, str]:
        """The query parameters, the last one of a repeated name winning."""
        return dict(urllib.parse.parse_qsl(self.query, keep_blank_values=True))

    def to_json(self) -> bytes:
        doc: Dict[str, Any] = {"method": self.method, "path": self.path, "query": self.query,
                               "headers": [[k, v] for k, v in self.headers],
                               "body": base64.b64encode(self.body).decode("ascii")}
        if self.root_path:
            doc["rootPath"] = self.root_path
        if self.scheme != "http":
            doc["scheme"] = self.scheme
        return json.dumps(doc).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> "Request":
        try:
            doc = json.loads(data.decode("utf-8"))
            if not isinstance(doc, dict):
                raise ValueError("not an object")
            headers = [(str(k), str(v)) for k, v in doc.get("headers") or []]
            body = base64.b64decode(doc.get("body") or "", validate=True)
        except (ValueError, TypeError, UnicodeDecodeError) as e:
            raise ValueError("the HTTP call's request envelope does not decode: %s" % e) from None
        return cls(method=str(doc.get("method") or "GET"), path=str(doc.get("path") or "/"),
                   query=str(doc.get("query") or ""), headers=headers, body=body,
                   root_path=str(doc.get("rootPath") or ""), scheme=str(doc.get("scheme") or "http"))


class Response:
    """A response envelope."""

    def __init__(self, status: int = 200, headers: Optional[Headers] = None, body: bytes = b""):
        self.status = int(status)
        self.headers: Headers = list(headers or [])
        self.body = body

    def header(self, name: str, default: str = "") -> str:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    def to_json(self) -> bytes:
        return json.dumps({"status": self.status, "headers": [[k, v] for k, v in self.headers],
                           "body": base64.b64encode(self.body).decode("ascii")}).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> "Response":
        doc = json.loads(data.decode("utf-8"))
        return cls(int(doc["status"]), [(str(k), str(v)) for k, v in doc.get("headers") or []],
                   base64.b64decode(doc.get("body") or ""))

    def __repr__(self) -> str:
        return "Response(%d, %r, %r)" % (self.status, self.headers, self.body[:200])


JSON = "application/json"


def json_response(value: Any, status: int = 200) -> Response:
    return Response(status, [("content-type", JSON)], json.dumps(value, default=str).encode("utf-8"))


def error_response(status: int, code: str, message: str) -> Response:
    """The caller's error, in the front door's error shape."""
    return json_response({"error": {"code": code, "message": message}}, status)


def value_response(value: Any) -> Response:
    """A function's return value as a 200: bytes and str as they are,
    anything else as JSON (what JSON cannot say becomes its str())."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Response(200, [("content-type", "application/octet-stream")], bytes(value))
    if isinstance(value, str):
        return Response(200, [("content-type", "text/plain; charset=utf-8")], value.encode("utf-8"))
    return json_response(value)


class BadRequest(Exception):
    """The request does not fit the function: answered 400."""


# Awaiting coroutines: one event loop per container, on its own thread, so
# that an async function's state (clients, pools) lives on one loop.

_loop: Optional[asyncio.AbstractEventLoop] = None
_loop_lock = threading.Lock()


def loop() -> asyncio.AbstractEventLoop:
    """The container's event loop, started at first use."""
    global _loop
    with _loop_lock:
        if _loop is None:
            lp = asyncio.new_event_loop()
            threading.Thread(target=lp.run_forever, name="levers9-loop", daemon=True).start()
            _loop = lp
        return _loop


def run(coro: Any) -> Any:
    """Runs coro on the container's loop and returns its result (from any
    thread but the loop's own)."""
    return asyncio.run_coroutine_threadsafe(coro, loop()).result()


def settle(value: Any) -> Any:
    """value, awaited when it is awaitable (an async def function's)."""
    if inspect.isawaitable(value):
        async def wait() -> Any:
            return await value
        return run(wait())
    return value


_cached_signature = functools.lru_cache(maxsize=64)(inspect.signature)


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    """fn's signature, worked out once per function (every HTTP call
    checks it); an unhashable callable's every time."""
    try:
        return _cached_signature(fn)
    except TypeError:
        return inspect.signature(fn)


def _fits(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
    """Raises BadRequest when fn cannot take these arguments: the caller
    sent the wrong ones (a TypeError inside fn stays the function's)."""
    try:
        sig = _signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or the like: let the call say
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        raise BadRequest("the request does not fit %s%s: %s" % (getattr(fn, "__name__", "the function"), sig, e)) \
            from None


def _json_body(req: Request) -> Any:
    try:
        return json.loads(req.body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        ctype = req.header("content-type") or "none"
        raise BadRequest("the request body is not JSON (content-type %s): %s" % (ctype, e)) from None


def _call(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    _fits(fn, args, kwargs)
    return settle(fn(*args, **kwargs))


def endpoint(fn: Callable[..., Any], req: Request) -> Response:
    """An ENDPOINT: a non-empty body is fn's one argument (JSON), else the
    query parameters are its keyword arguments (strings)."""
    try:
        if req.body:
            args: Tuple[Any, ...] = (_json_body(req),)
            kwargs: Dict[str, Any] = {}
        else:
            args, kwargs = (), req.params()
        _fits(fn, args, kwargs)
    except BadRequest as e:
        return error_response(400, "BAD_REQUEST", str(e))
    return value_response(settle(fn(*args, **kwargs)))


def job(fn: Callable[..., Any], req: Request) -> Response:
    """A FUNCTION called through /job: the body is {"args": [...],
    "kwargs": {...}} (both optional; empty body: no arguments)."""
    try:
        doc = _json_body(req) if req.body.strip() else {}
        if not isinstance(doc, dict) or set(doc) - {"args", "kwargs"}:
            raise BadRequest('the body must be a JSON object {"args": [...], "kwargs": {...}}')
        args, kwargs = doc.get("args") or [], doc.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise BadRequest('"args" must be a JSON array and "kwargs" a JSON object')
        _fits(fn, tuple(args), kwargs)
    except BadRequest as e:
        return error_response(400, "BAD_REQUEST", str(e))
    return json_response(settle(fn(*args, **kwargs)))


def queue_item(fn: Callable[..., Any], req: Request) -> Response:
    """A TASK_QUEUE item put over HTTP: the body is the item (JSON)."""
    try:
        item = _json_body(req)
        _fits(fn, (item,), {})
    except BadRequest as e:
        return error_response(400, "BAD_REQUEST", str(e))
    return json_response(settle(fn(item)))

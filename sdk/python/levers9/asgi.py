"""An ASGI 3 server without sockets: the runner drives an app with one
request envelope at a time and collects its response envelope.

The app is built once per container (the decorated factory's return
value) and its lifespan started once, when it speaks the lifespan
protocol (an app that raises for a lifespan scope does not, and is served
without it, as uvicorn's "auto" mode does).
"""

import asyncio
import threading
import traceback
import urllib.parse
from typing import Any, Awaitable, Callable, Dict, List, Optional

from . import httpcall

ASGIApp = Callable[[Dict[str, Any], Callable[[], Awaitable[Dict[str, Any]]],
                    Callable[[Dict[str, Any]], Awaitable[None]]], Awaitable[None]]

LIFESPAN_TIMEOUT = 300.0
SHUTDOWN_TIMEOUT = 10.0


class LifespanFailed(Exception):
    """The app's lifespan startup failed (lifespan.startup.failed or an
    exception after it began): every request fails with it."""


class Host:
    """Serves requests to app on the container's event loop."""

    def __init__(self, app: ASGIApp, log: Callable[[str], None] = print):
        if not callable(app):
            raise TypeError("the ASGI factory returned %r, not an ASGI application" % (app,))
        self.app = app
        self.log = log
        self.state: Dict[str, Any] = {}
        self._lifespan: Optional["_Lifespan"] = None
        self._lock = threading.Lock()
        self._started = False
        self._failure = ""

    def startup(self) -> None:
        """Runs the lifespan startup once (any thread but the loop's)."""
        with self._lock:
            if not self._started:
                self._started = True
                ls = _Lifespan(self.app, self.state, self.log)
                try:
                    if httpcall.run(asyncio.wait_for(ls.startup(), LIFESPAN_TIMEOUT)):
                        self._lifespan = ls
                except BaseException as e:  # noqa: B902: every request fails with it
                    self._failure = str(e) if isinstance(e, LifespanFailed) else \
                        "the ASGI app's lifespan startup failed: %s: %s" % (type(e).__name__, e)
            if self._failure:
                raise LifespanFailed(self._failure)

    def shutdown(self) -> None:
        """Runs the lifespan shutdown, when the startup ran."""
        ls, self._lifespan = self._lifespan, None
        if ls is not None:
            try:
                httpcall.run(asyncio.wait_for(ls.shutdown(), SHUTDOWN_TIMEOUT))
            except Exception as e:  # leaving anyway
                self.log("levers9 runner: the ASGI lifespan shutdown failed: %s: %s" % (type(e).__name__, e))

    def handle(self, req: httpcall.Request) -> httpcall.Response:
        self.startup()
        return httpcall.run(self.serve(req))

    def scope(self, req: httpcall.Request) -> Dict[str, Any]:
        raw = req.path if req.path.startswith("/") else "/" + req.path
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": req.method,
            "scheme": req.scheme,
            "path": urllib.parse.unquote(raw),
            "raw_path": raw.encode("latin-1", "replace"),
            "query_string": req.query.encode("latin-1", "replace"),
            "root_path": req.root_path.rstrip("/"),
            "headers": [(k.encode("latin-1", "replace"), v.encode("latin-1", "replace")) for k, v in req.headers],
            "client": None,
            "server": None,
            "state": dict(self.state),
        }

    async def serve(self, req: httpcall.Request) -> httpcall.Response:
        """One request through the app (on the loop)."""
        done = asyncio.Event()
        sent_body = False
        status: Optional[int] = None
        headers: List[Any] = []
        chunks: List[bytes] = []

        async def receive() -> Dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": req.body, "more_body": False}
            await done.wait()  # the client "leaves" once the response is complete
            return {"type": "http.disconnect"}

        async def send(msg: Dict[str, Any]) -> None:
            nonlocal status, headers
            t = msg.get("type")
            if done.is_set():
                raise RuntimeError("ASGI message %r after the response completed" % t)
            if t == "http.response.start":
                if status is not None:
                    raise RuntimeError("http.response.start sent twice")
                status = int(msg["status"])
                headers = list(msg.get("headers") or [])
            elif t == "http.response.body":
                if status is None:
                    raise RuntimeError("http.response.body before http.response.start")
                chunks.append(bytes(msg.get("body") or b""))
                if not msg.get("more_body", False):
                    done.set()
            else:
                raise RuntimeError("unexpected ASGI message %r for an http scope" % t)

        try:
            await self.app(self.scope(req), receive, send)
        except BaseException:
            if not done.is_set():
                raise
            # The response went out whole: a real server's client has it.
            self.log("levers9 runner: the ASGI app raised after its response:\n%s" % traceback.format_exc().rstrip())
        if status is None:
            raise RuntimeError("the ASGI app returned without sending a response")
        done.set()  # a response without its last body message ends here
        return httpcall.Response(status, [(_text(k), _text(v)) for k, v in headers], b"".join(chunks))


def _text(b: Any) -> str:
    return b.decode("latin-1") if isinstance(b, (bytes, bytearray)) else str(b)


class _Lifespan:
    """The lifespan protocol: one long-lived app call with scope type
    "lifespan", fed startup then shutdown."""

    def __init__(self, app: ASGIApp, state: Dict[str, Any], log: Callable[[str], None]):
        self.app = app
        self.state = state
        self.log = log
        self.inbox: "asyncio.Queue[Dict[str, Any]]" = None  # type: ignore[assignment]
        self.started: "asyncio.Future[Any]" = None  # type: ignore[assignment]
        self.stopped: "asyncio.Future[Any]" = None  # type: ignore[assignment]
        self.task: Optional["asyncio.Task[None]"] = None

    async def startup(self) -> bool:
        """Whether the app speaks lifespan and started; raises
        LifespanFailed when it said its startup failed."""
        lp = asyncio.get_running_loop()
        self.inbox = asyncio.Queue()
        self.started, self.stopped = lp.create_future(), lp.create_future()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self.task = lp.create_task(self._run(scope))
        await self.inbox.put({"type": "lifespan.startup"})
        ok, message = await self.started
        if ok is None:
            return False
        if not ok:
            raise LifespanFailed("the ASGI app's lifespan startup failed: %s" % message)
        return True

    async def shutdown(self) -> None:
        await self.inbox.put({"type": "lifespan.shutdown"})
        ok, message = await self.stopped
        if ok is False:
            self.log("levers9 runner: the ASGI app's lifespan shutdown failed: %s" % message)

    async def _run(self, scope: Dict[str, Any]) -> None:
        async def receive() -> Dict[str, Any]:
            return await self.inbox.get()

        async def send(msg: Dict[str, Any]) -> None:
            t = msg.get("type")
            if t == "lifespan.startup.complete":
                _resolve(self.started, (True, ""))
            elif t == "lifespan.startup.failed":
                _resolve(self.started, (False, msg.get("message", "")))
            elif t == "lifespan.shutdown.complete":
                _resolve(self.stopped, (True, ""))
            elif t == "lifespan.shutdown.failed":
                _resolve(self.stopped, (False, msg.get("message", "")))

        try:
            await self.app(scope, receive, send)
        except BaseException as e:  # noqa: B902
            if not self.started.done():
                # Raising before starting: no lifespan support.
                self.log("levers9 runner: the ASGI app does not speak lifespan (%s: %s): served without it" % (
                    type(e).__name__, e))
                _resolve(self.started, (None, ""))
            else:
                self.log("levers9 runner: the ASGI lifespan ended with %s: %s" % (type(e).__name__, e))
            _resolve(self.stopped, (False, "%s: %s" % (type(e).__name__, e)))
            return
        # Returning is allowed; before startup completed it means no support.
        _resolve(self.started, (None, ""))
        _resolve(self.stopped, (True, ""))


def _resolve(f: "asyncio.Future[Any]", v: Any) -> None:
    if not f.done():
        f.set_result(v)

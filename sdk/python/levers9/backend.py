"""The two ways calls reach the server.

Outside a container calls go through GraphQL with the user's token
(GraphQLBackend). Inside a function's container (LEVERS9_RUNNER_SOCKET is
set) they go through the runner API on the agent's unix socket
(RunnerBackend): the container holds no token, and may call only the
functions of its own app, which it names by name.

Both answer with the same Task and Map JSON (the GraphQL field names).
"""

import http.client
import json
import os
import random
import select
import socket
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import errors, payload
from .transport import error_from

TASK_FIELDS = "id state mapIndex attempt result { data blob } errorKind errorMessage errorTraceback errorException"
MAP_FIELDS = "id total succeeded failed finishedAt"
# What deployApp answers: an ephemeral app's function IDs (levers9 run);
# with each deployment's kind and URLs (App.deploy, levers9 serve).
APP_FIELDS = "id name state functions { id name }"
DEPLOYED_FIELDS = "id name state version liveVersion functions { id name version kind deployment urls }"
LOOKUP_FIELDS = "id name version kind deployment urls"

# The longest a single long poll waits (the server caps waits at 60 s;
# shorter polls stay well inside the HTTP timeouts).
POLL_SECONDS = 25.0


class Backend:
    """What functions.py needs from a transport."""

    # Pickles up to this size travel inline in a call; a map's items
    # together stay under map_budget bytes of JSON (larger items become
    # blobs), since the request carries them all.
    inline_limit = payload.INLINE_LIMIT
    map_budget = 64_000_000  # the runner API takes bodies up to 128 MiB

    def put_blob(self, digest: str, data: bytes) -> None:
        raise NotImplementedError

    def get_blob(self, digest: str) -> bytes:
        raise NotImplementedError

    def call(self, fn: str, args: Dict[str, str]) -> Dict[str, Any]:
        raise NotImplementedError

    def map(self, fn: str, items: List[Dict[str, str]]) -> Dict[str, Any]:
        raise NotImplementedError

    def await_task(self, task_id: str, wait: float) -> Dict[str, Any]:
        raise NotImplementedError

    def map_results(self, map_id: str, start: int, limit: int, wait: float) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        raise NotImplementedError

    def cancel(self, task_id: str) -> Dict[str, Any]:
        raise NotImplementedError

    def put(self, fn: str, item: Dict[str, str], idempotency_key: Optional[str]) -> Dict[str, Any]:
        raise NotImplementedError

    def cancel_map(self, map_id: str) -> Dict[str, Any]:
        raise errors.Error("cancelling a map is not possible from inside a function")


class GraphQLBackend(Backend):
    """Calls through /graphql and /api/blobs with a levers9.Client."""

    # The GraphQL endpoint takes bodies up to 8 MiB: a map's inline items
    # share 6 MB of it (base64 makes a pickle a third larger); later items
    # go as blobs.
    map_budget = 6_000_000

    def __init__(self, client):
        self.client = client
        self._http = client._http
        # A long poll must end before the client's HTTP timeout does.
        self.poll = max(1.0, min(POLL_SECONDS, self._http.timeout - 5))

    def put_blob(self, digest: str, data: bytes, kind: str = "payload") -> None:
        # PUT is idempotent (200 when the tenant already had the blob).
        with self._http.request("PUT", "/api/blobs/%s?kind=%s" % (digest, kind), data,
                                {"Content-Type": "application/octet-stream", "Content-Length": str(len(data))},
                                idempotent=True, timeout=max(self._http.timeout, 300)):
            pass

    def has_blob(self, digest: str) -> bool:
        try:
            with self._http.request("HEAD", "/api/blobs/%s" % digest):
                return True
        except errors.NotFound:
            return False

    def upload_code(self, digest: str, data: bytes) -> bool:
        """Uploads a code package unless the tenant has it; True when sent."""
        if self.has_blob(digest):
            return False
        self.put_blob(digest, data, kind="code")
        return True

    def get_blob(self, digest: str) -> bytes:
        with self._http.request("GET", "/api/blobs/%s" % digest, timeout=max(self._http.timeout, 300)) as resp:
            return resp.read()

    def deploy(self, name: str, code_hash: str, functions: List[Dict[str, Any]], deploy: bool = False,
               fields: str = APP_FIELDS) -> Dict[str, Any]:
        """deployApp: an ephemeral app, or (deploy=True) a new version of
        the deployed app of that name."""
        i: Dict[str, Any] = {"name": name, "code": code_hash, "functions": functions}
        if deploy:
            i["deploy"] = True
        app = self.client.graphql("mutation($i: DeployAppInput!) { deployApp(input: $i) { %s } }" % fields,
                                  {"i": i})["deployApp"]
        for f in app.get("functions") or []:
            self._absolute(f)
        return app

    def _absolute(self, f: Dict[str, Any]) -> Dict[str, Any]:
        """A function's urls in full: a server with no public URL set
        answers paths, reached through the client's server."""
        if f.get("urls"):
            base = str(getattr(self.client, "server", "") or "").rstrip("/")
            f["urls"] = [base + u if u.startswith("/") else u for u in f["urls"]]
        return f

    def lookup_function(self, app: str, name: str, version: Optional[int]) -> Dict[str, Any]:
        return self._absolute(self.client.graphql(
            "query($a: String!, $n: String!, $v: Int) { lookupFunction(app: $a, name: $n, version: $v) { %s } }"
            % LOOKUP_FIELDS, {"a": app, "n": name, "v": version})["lookupFunction"])

    def put(self, fn: str, item: Dict[str, str], idempotency_key: Optional[str]) -> Dict[str, Any]:
        # With a key a repeat returns the first task: safe to retry.
        return self.client.graphql(
            "mutation($f: ID!, $i: PayloadInput!, $k: String) { putTask(function: $f, item: $i, idempotencyKey: $k)"
            " { %s } }" % TASK_FIELDS, {"f": fn, "i": item, "k": idempotency_key},
            idempotent=bool(idempotency_key))["putTask"]

    def heartbeat_app(self, app_id: str) -> None:
        self.client.graphql("mutation($id: ID!) { heartbeatApp(id: $id) { id state } }", {"id": app_id}, idempotent=True)

    def stop_app(self, app_id: str) -> None:
        self.client.graphql("mutation($id: ID!) { stopApp(id: $id) { id state } }", {"id": app_id}, idempotent=True)

    def call(self, fn: str, args: Dict[str, str]) -> Dict[str, Any]:
        return self.client.graphql("mutation($f: ID!, $a: PayloadInput!) { callFunction(function: $f, args: $a) { %s } }"
                                   % TASK_FIELDS, {"f": fn, "a": args})["callFunction"]

    def map(self, fn: str, items: List[Dict[str, str]]) -> Dict[str, Any]:
        return self.client.graphql("mutation($f: ID!, $i: [PayloadInput!]!) { mapFunction(function: $f, items: $i) { %s } }"
                                   % MAP_FIELDS, {"f": fn, "i": items})["mapFunction"]

    def await_task(self, task_id: str, wait: float) -> Dict[str, Any]:
        return self.client.graphql("query($id: ID!, $w: Float) { awaitTask(id: $id, waitSeconds: $w) { %s } }"
                                   % TASK_FIELDS, {"id": task_id, "w": min(wait, self.poll)})["awaitTask"]

    def map_results(self, map_id, start, limit, wait):
        r = self.client.graphql(
            "query($id: ID!, $f: Int!, $n: Int, $w: Float) { mapResults(id: $id, from: $f, limit: $n, waitSeconds: $w)"
            " { map { %s } tasks { %s } } }" % (MAP_FIELDS, TASK_FIELDS),
            {"id": map_id, "f": start, "n": limit, "w": min(wait, self.poll)})["mapResults"]
        return r["map"], r["tasks"] or []

    def cancel(self, task_id: str) -> Dict[str, Any]:
        return self.client.graphql("mutation($id: ID!) { cancelTask(id: $id) { %s } }" % TASK_FIELDS,
                                   {"id": task_id}, idempotent=True)["cancelTask"]

    def task_info(self, task_id: str) -> Dict[str, Any]:
        node = self.client.graphql(
            "query($id: ID!) { node(id: $id) { ... on Task { id state attempt maxAttempts waitReason containerID"
            " phases { queuedAt scheduledAt imageReadyAt codeFetchedAt processStartedAt importedAt startedAt"
            " finishedAt } } } }", {"id": task_id})["node"]
        if not node:
            raise errors.NotFound("task %s not found" % task_id, code="NOT_FOUND")
        return node

    def cancel_map(self, map_id: str) -> Dict[str, Any]:
        return self.client.graphql("mutation($id: ID!) { cancelMap(id: $id) { %s } }" % MAP_FIELDS,
                                   {"id": map_id}, idempotent=True)["cancelMap"]


class UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket (the runner API)."""

    def __init__(self, path: str, timeout: float = 90.0):
        super().__init__("runner", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            raise
        self.sock = s


class RunnerAPI:
    """JSON requests to the runner API, one kept-alive connection per thread."""

    def __init__(self, path: str, timeout: float = 90.0):
        self.path = path
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self) -> UnixConnection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            # Readable while idle: the agent closed it (EOF). A call must
            # not be sent on it, since it would not be retried.
            self.close()
            conn = None
        if conn is None:
            conn = UnixConnection(self.path, self.timeout)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def raw(self, method: str, path: str, body: Optional[bytes] = None, content_type: str = "application/json",
            retry: bool = True) -> bytes:
        """Sends one request; a connection the agent closed while idle is
        reopened once (a kept-alive connection may be stale)."""
        headers = {"Content-Type": content_type} if body is not None else {}
        for attempt in (0, 1):
            conn = self._conn()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                self.close()
                if attempt == 0 and retry and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError,
                                                              ConnectionResetError)):
                    continue
                raise errors.NetworkError("runner API %s %s: %s" % (method, path, e)) from None
            if resp.will_close:
                self.close()
            if resp.status >= 300:
                raise error_from(resp.status, resp.reason, data)
            return data
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, doc: Any = None, retry: bool = True) -> Any:
        body = None if doc is None else json.dumps(doc).encode("utf-8")
        data = self.raw(method, path, body, retry=retry)
        return json.loads(data.decode("utf-8")) if data else {}


class RunnerBackend(Backend):
    """Calls from inside a function's container, over the runner API."""

    def __init__(self, path: str):
        self.api = RunnerAPI(path)

    def put_blob(self, digest: str, data: bytes) -> None:
        self.api.raw("PUT", "/runner/v1/blobs/" + digest, data, "application/octet-stream")

    def get_blob(self, digest: str) -> bytes:
        return self.api.raw("GET", "/runner/v1/blobs/" + digest)

    def call(self, fn: str, args: Dict[str, str]) -> Dict[str, Any]:
        return self.api.json("POST", "/runner/v1/call", {"function": fn, "args": args}, retry=False)

    def map(self, fn: str, items: List[Dict[str, str]]) -> Dict[str, Any]:
        return self.api.json("POST", "/runner/v1/map", {"function": fn, "items": items}, retry=False)

    def await_task(self, task_id: str, wait: float) -> Dict[str, Any]:
        return self.api.json("POST", "/runner/v1/await", {"task": task_id, "waitMs": int(min(wait, POLL_SECONDS) * 1000)})

    def map_results(self, map_id, start, limit, wait):
        r = self.api.json("POST", "/runner/v1/map-results", {"map": map_id, "from": start, "limit": limit,
                                                              "waitMs": int(min(wait, POLL_SECONDS) * 1000)})
        return r["map"], r.get("tasks") or []

    def cancel(self, task_id: str) -> Dict[str, Any]:
        return self.api.json("POST", "/runner/v1/cancel", {"task": task_id})

    def put(self, fn: str, item: Dict[str, str], idempotency_key: Optional[str]) -> Dict[str, Any]:
        return self.api.json("POST", "/runner/v1/put", {"function": fn, "item": item,
                                                         "idempotencyKey": idempotency_key or ""}, retry=False)


_runner_backend: Optional[RunnerBackend] = None
_lock = threading.Lock()


def in_container() -> bool:
    return bool(os.environ.get("LEVERS9_RUNNER_SOCKET"))


def runner_backend() -> RunnerBackend:
    """The runner API backend of this container (one per process)."""
    global _runner_backend
    with _lock:
        if _runner_backend is None:
            _runner_backend = RunnerBackend(os.environ["LEVERS9_RUNNER_SOCKET"])
        return _runner_backend


def backoff_sleep(attempt: int, base: float = 0.005, cap: float = 0.5) -> None:
    time.sleep(min(cap, base * (2 ** attempt)) * (0.75 + random.random() / 2))

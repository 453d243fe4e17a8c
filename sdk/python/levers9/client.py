"""The levers9 client: GraphQL for anything, typed helpers for the rest."""

import decimal
import json
import re
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import config, errors
from .buckets import Buckets
from .jobs import Job, JOB_FIELDS
from .transport import Transport

_MUTATION = re.compile(r"^\s*(#[^\n]*\n\s*)*mutation\b")


class Estimate:
    """What a job costs: a start fee, a price per minute and the total for
    the minutes asked, in tokens (exact decimals)."""

    def __init__(self, start_fee: decimal.Decimal, per_minute: decimal.Decimal, minutes: int,
                 total: decimal.Decimal):
        self.start_fee = start_fee
        self.per_minute = per_minute
        self.minutes = minutes
        self.total = total

    def __repr__(self) -> str:
        return "Estimate(start_fee=%s, per_minute=%s, minutes=%d, total=%s)" % (
            self.start_fee, self.per_minute, self.minutes, self.total)


class Client:
    """A connection to a levers9 server.

    The server and token come from the arguments, else from LEVERS9_SERVER
    and LEVERS9_TOKEN, else from the context named (or the current one) in
    ~/.levers9/config, the file ``levers9 login`` writes.

    >>> import levers9
    >>> client = levers9.Client(server="http://127.0.0.1:8080", token="lv9_example")
    >>> client.server
    'http://127.0.0.1:8080'

    Args:
        context: a context of the config file to use instead of the current one.
        server: the server URL.
        token: an API token.
        timeout: seconds to wait for an answer (log streams wait longer).
        retries: how often a transient failure of a safe request is retried.
    """

    def __init__(self, context: Optional[str] = None, server: Optional[str] = None,
                 token: Optional[str] = None, timeout: float = 30.0, retries: int = 4):
        conn = config.resolve(context, server, token)
        self.server = conn.server
        self.default_queue = conn.queue or "default"
        self.default_project = conn.project
        self._http = Transport(conn.server, conn.token, timeout=timeout, retries=retries)
        self.buckets = Buckets(self._http)

    def __repr__(self) -> str:
        return "Client(server=%r)" % self.server

    def close(self) -> None:
        """Closes the client's kept-alive connections (also on ``with``)."""
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @classmethod
    def sign_in(cls, email: str, password: str, server: Optional[str] = None, context: Optional[str] = None,
                **kwargs: Any) -> "Client":
        """Signs in with email and password and returns a client acting with
        the session (the tenant follows from the email's domain).

        ``client.graphql('mutation { createAPIToken(name: "laptop") { token } }')``
        then makes a lasting API token, as ``levers9 login`` does.
        """
        server = config.resolve(context, server, token="unused").server
        anon = cls(server=server, token="unused", **kwargs)
        data = anon.graphql("mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }",
                            {"e": email, "p": password}, auth=False)
        return cls(server=server, token=data["signIn"]["token"], **kwargs)

    # GraphQL

    def graphql(self, query: str, variables: Optional[Dict[str, Any]] = None,
                idempotent: Optional[bool] = None, auth: bool = True) -> Dict[str, Any]:
        """Sends one GraphQL request and returns its ``data``.

        Numbers with a fraction come back as decimal.Decimal, so token
        amounts stay exact. The first error of the answer is raised as the
        levers9.Error subclass of its code. Queries are retried after
        transient failures; mutations only when idempotent=True says that
        running them twice is harmless.
        """
        if idempotent is None:
            idempotent = not _MUTATION.match(query)
        body = json.dumps({"query": query, "variables": variables or {}}, default=_encode).encode("utf-8")
        raw = self._http.fetch("POST", "/graphql", body, {"Content-Type": "application/json"},
                               idempotent=idempotent, auth=auth)
        try:
            doc = json.loads(raw.decode("utf-8"), parse_float=decimal.Decimal)
        except ValueError:
            raise errors.Error("the server answered something other than GraphQL") from None
        if doc.get("errors"):
            raise errors.from_graphql(doc["errors"][0])
        return doc.get("data") or {}

    # Jobs

    def submit_job(self, command: Optional[Sequence[str]] = None, *, services: Optional[List[Dict[str, Any]]] = None,
                   queue: Optional[str] = None, project: Optional[str] = None, name: str = "",
                   mounts: Optional[List[Dict[str, Any]]] = None, resources: Optional[Dict[str, Any]] = None,
                   image: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                   idempotency_key: Optional[str] = None, **spec: Any) -> Job:
        """Submits a job and returns it (PENDING).

        Either give ``command`` for a job of one service named ``main``
        (with ``resources`` such as ``{"cpu": 2, "memoryMiB": 4096,
        "gpus": 1, "gpuTypes": ["H100"]}``, an ``image`` and ``env``), or
        ``services``: a list of service specs as the GraphQL
        ServiceSpecInput takes them. ``queue`` and ``project`` default to
        the context's. ``mounts`` are ``{"bucket", "path", "readOnly"}``.
        Further keyword arguments (``priority``, ``timeoutSeconds``,
        ``retries``, ``interactive``) go into the spec as they are.

        The submission carries an idempotency key (a new one unless given),
        so it is retried after a lost answer without creating a second job.
        """
        if (command is None) == (services is None):
            raise errors.BadInput("give either command or services", code="BAD_USER_INPUT", field="services")
        if command is not None:
            if isinstance(command, str):
                raise errors.BadInput("command is a list of arguments, such as ['echo', 'hi']",
                                      code="BAD_USER_INPUT", field="command")
            svc: Dict[str, Any] = {"name": "main", "command": list(command)}
            svc.update(resources or {})
            if image:
                svc["image"] = image
            if env:
                svc["env"] = [{"name": k, "value": v} for k, v in env.items()]
            services = [svc]
        s: Dict[str, Any] = dict(spec)
        s.update({"queue": queue or self.default_queue, "services": services})
        if name:
            s["name"] = name
        if project or self.default_project:
            s["project"] = project or self.default_project
        if mounts:
            s["mounts"] = mounts
        key = idempotency_key or uuid.uuid4().hex
        data = self.graphql(
            "mutation($s: JobSpecInput!, $k: String) { submitJob(spec: $s, idempotencyKey: $k) { %s } }" % JOB_FIELDS,
            {"s": s, "k": key}, idempotent=True)
        return Job(self, data["submitJob"])

    def job(self, job_id: str) -> Job:
        """Returns the job with this ID; NotFound when there is none."""
        return Job(self, {"id": job_id}).refresh()

    def jobs(self, status: Optional[str] = None, queue: Optional[str] = None, where: Optional[Dict[str, Any]] = None,
             page_size: int = 100, newest_first: bool = True) -> Iterator[Job]:
        """Iterates over the jobs the viewer sees, fetching page after page.

        status ("PENDING", "RUNNING", "COMPLETE", "ERROR", "CANCELLED") and
        queue (a queue name) filter; where is a GraphQL JobWhereInput for
        anything else.
        """
        w: Dict[str, Any] = dict(where or {})
        if status:
            w["status"] = status.upper()
        if queue:
            w["queueID"] = self._queue_id(queue)
        order = {"field": "CREATED_AT", "direction": "DESC" if newest_first else "ASC"}
        after = None
        while True:
            data = self.graphql(
                "query($n: Int!, $a: Cursor, $w: JobWhereInput, $o: JobOrder) { jobs(first: $n, after: $a, where: $w, orderBy: $o) {"
                " edges { node { %s } } pageInfo { hasNextPage endCursor } } }" % JOB_FIELDS,
                {"n": page_size, "a": after, "w": w or None, "o": order})
            conn = data["jobs"]
            for edge in conn["edges"] or []:
                yield Job(self, edge["node"])
            if not conn["pageInfo"]["hasNextPage"]:
                return
            after = conn["pageInfo"]["endCursor"]

    def _queue_id(self, queue: str) -> str:
        """The ID of a queue given by ID or name."""
        if queue.startswith("que_"):
            return queue
        edges = self.graphql("query($n: String!) { queues(where: {name: $n}) { edges { node { id } } } }",
                             {"n": queue})["queues"]["edges"]
        if not edges:
            raise errors.NotFound("queue %r not found" % queue, code="NOT_FOUND")
        return edges[0]["node"]["id"]

    def estimate(self, command: Optional[Sequence[str]] = None, *, services: Optional[List[Dict[str, Any]]] = None,
                 queue: Optional[str] = None, project: Optional[str] = None,
                 resources: Optional[Dict[str, Any]] = None, minutes: int = 60,
                 mounts: Optional[List[Dict[str, Any]]] = None) -> Estimate:
        """Prices a job as submit_job would submit it, for minutes of running."""
        if (command is None) == (services is None):
            raise errors.BadInput("give either command or services", code="BAD_USER_INPUT", field="services")
        if command is not None:
            services = [dict({"name": "main", "command": list(command)}, **(resources or {}))]
        s: Dict[str, Any] = {"queue": queue or self.default_queue, "services": services}
        if project or self.default_project:
            s["project"] = project or self.default_project
        if mounts:
            s["mounts"] = mounts
        e = self.graphql("query($s: JobSpecInput!, $m: Int!) { estimateJobCost(spec: $s, minutes: $m) "
                         "{ startFee perMinute minutes total } }", {"s": s, "m": minutes})["estimateJobCost"]
        return Estimate(_dec(e["startFee"]), _dec(e["perMinute"]), e["minutes"], _dec(e["total"]))

    def balance(self) -> decimal.Decimal:
        """The viewer's own token balance (not their projects')."""
        return _dec(self.graphql("{ viewer { balance } }")["viewer"]["balance"] or 0)


def _encode(v: Any) -> Any:
    """JSON for variables json cannot encode: decimals go as exact strings
    (the API's Tokens, Float and Int scalars accept them)."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    raise TypeError("%s is not JSON serializable" % type(v).__name__)


def _dec(v: Union[int, decimal.Decimal, str]) -> decimal.Decimal:
    return decimal.Decimal(v) if not isinstance(v, decimal.Decimal) else v

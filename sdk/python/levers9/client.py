"""The levers9 client: GraphQL for anything, typed helpers for the rest."""

import decimal
import json
import re
import uuid
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Union

from . import config, errors
from . import spec as spec_
from .args import checked
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

    @checked
    def __init__(self, context: Optional[str] = None, server: Optional[str] = None,
                 token: Optional[str] = None, timeout: float = 30.0, retries: int = 4):
        conn = config.resolve(context, server, token)
        self.server = conn.server
        self.default_queue = conn.queue or "default"
        self.default_project = conn.project
        self._http = Transport(conn.server, conn.token, timeout=timeout, retries=retries)
        self.buckets = Buckets(self._http, self)

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
    @checked
    def sign_in(cls, email: str, password: str, server: Optional[str] = None, context: Optional[str] = None,
                timeout: float = 30.0, retries: int = 4) -> "Client":
        """Signs in with an email and password and returns a client acting
        with that sign-in session, for people without an API token yet.

        The tenant follows from the email's domain. server (else
        LEVERS9_SERVER, else the config file's context) is where to sign
        in; timeout and retries are as for Client(). Wrong credentials
        raise levers9.Unauthenticated.

        The session lasts 12 hours, or until ``sign_out()``. For scripts
        that run unattended, make a lasting API token with it and end the
        session, as ``levers9 login`` does::

            session = levers9.Client.sign_in("ada@example.com", password, server="https://levers9.example")
            token = session.create_api_token("laptop")
            session.sign_out()
            client = levers9.Client(server=session.server, token=token)
        """
        server = config.resolve(context, server, token="unused").server
        with cls(server=server, token="unused", timeout=timeout, retries=retries) as anon:
            data = anon.graphql("mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }",
                                {"e": email, "p": password}, auth=False)
        return cls(server=server, token=data["signIn"]["token"], timeout=timeout, retries=retries)

    @checked
    def create_api_token(self, name: str) -> str:
        """Makes an API token of the viewer, named name, and returns its
        secret (shown only this once; ``levers9 token list`` and ``levers9
        token revoke`` manage it)."""
        data = self.graphql("mutation($n: String!) { createAPIToken(name: $n) { token } }", {"n": name})
        return data["createAPIToken"]["token"]

    def sign_out(self) -> bool:
        """Ends the sign-in session this client acts with (see sign_in);
        its token is refused from then on. False when the client uses an
        API token (``levers9 token revoke`` revokes those)."""
        return bool(self.graphql("mutation { signOut }")["signOut"])

    # GraphQL

    @checked
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

    def submit_job(self, command: Optional[Sequence[str]] = None, *,
                   services: Optional[Sequence[Mapping[str, Any]]] = None, queue: Optional[str] = None,
                   project: Optional[str] = None, name: Optional[str] = None, image: Optional[str] = None,
                   env: Optional[Mapping[str, str]] = None, cpu: Optional[float] = None,
                   memory_mib: Optional[int] = None, gpus: Optional[int] = None,
                   gpu_types: Union[None, str, Sequence[str]] = None, resources: Optional[Mapping[str, Any]] = None,
                   args: Optional[Sequence[str]] = None, ports: Union[None, Mapping[str, int], Sequence[Any]] = None,
                   tty: Optional[bool] = None, mounts: Optional[Sequence[Mapping[str, Any]]] = None,
                   priority: Optional[int] = None, timeout_seconds: Optional[int] = None,
                   retries: Optional[int] = None, interactive: Optional[bool] = None,
                   idempotency_key: Optional[str] = None, **spec: Any) -> Job:
        """Submits a job and returns it (PENDING).

        Either give ``command`` (a list of arguments) for a job of one
        service named ``main``, sized by ``cpu``, ``memory_mib``, ``gpus``
        and ``gpu_types`` (a type, or a preference list: the first type
        with free GPUs wins; or all four as ``resources={...}``), with an
        ``image``, ``env`` (a dict), ``args``, ``ports`` (``{"http":
        8080}``) and ``tty``; or ``services``: a list of dicts with those
        keys and a ``name`` each. ``queue`` and ``project`` (names or IDs)
        default to the context's. ``mounts`` are dicts of ``bucket``,
        ``path`` and ``read_only``. ``priority``, ``timeout_seconds``,
        ``retries`` and ``interactive`` set the job's.

        Keywords and dict keys are snake_case; the API's camelCase
        spellings of dict keys (``memoryMiB``) and ``timeoutSeconds=`` are
        still taken. An unknown one raises TypeError (a levers9.BadInput)
        naming it and the closest spelling, before any request.

        The submission carries an idempotency key (a new one unless given),
        so it is retried after a lost answer without creating a second job.
        """
        options: Dict[str, Any] = {
            "queue": queue, "project": project, "name": name, "image": image, "env": env, "cpu": cpu,
            "memory_mib": memory_mib, "gpus": gpus, "gpu_types": gpu_types, "resources": resources, "args": args,
            "ports": ports, "tty": tty, "mounts": mounts, "priority": priority,
            "timeout_seconds": timeout_seconds, "retries": retries, "interactive": interactive,
        }
        spec_.legacy("submit_job()", spec, options, spec_.OPTIONS + ("command", "services", "idempotency_key"))
        s = self._spec("submit_job()", command, services, options, ("idempotency_key",))
        key = idempotency_key or uuid.uuid4().hex
        data = self.graphql(
            "mutation($s: JobSpecInput!, $k: String) { submitJob(spec: $s, idempotencyKey: $k) { %s } }" % JOB_FIELDS,
            {"s": s, "k": key}, idempotent=True)
        return Job(self, data["submitJob"])

    def _spec(self, where: str, command: Optional[Sequence[str]], services: Optional[Sequence[Mapping[str, Any]]],
              options: Dict[str, Any], also: Sequence[str]) -> Dict[str, Any]:
        """The wire spec, with the context's queue and project and empty
        strings and dicts taken as unset (as they always were)."""
        options = {k: (None if v in ("", {}) else v) for k, v in options.items()}
        options["queue"] = options.get("queue") or self.default_queue
        options["project"] = options.get("project") or self.default_project or None
        return spec_.job_spec(where, command, services, options, also)

    @checked
    def job(self, job_id: str) -> Job:
        """Returns the job with this ID; NotFound when there is none."""
        return Job(self, {"id": job_id}).refresh()

    @checked
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

    def estimate(self, command: Optional[Sequence[str]] = None, *,
                 services: Optional[Sequence[Mapping[str, Any]]] = None, minutes: int = 60,
                 **options: Any) -> Estimate:
        """Prices a job as submit_job would submit it (the same keyword
        arguments), for minutes of running."""
        s = self._spec("estimate()", command, services, options, ("minutes",))
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

"""Jobs: their state, their end, their output."""

import http.client
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

from . import errors, sse
from .args import checked

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

JOB_FIELDS = ("id name status statusReason createdAt startedAt finishedAt queue { name } "
              "services { name status statusReason exitCode }")

ENDED = ("COMPLETE", "ERROR", "CANCELLED")

_LOGS_QUERY = "query($j: ID!, $f: Int!, $n: Int!) { jobLogs(jobId: $j, fromSeq: $f, first: $n) { seq service stream time text } }"
# Batches: a chatty job costs one event per batch of lines, not per line.
_LOGS_SUB = "subscription($j: ID!, $f: Int!) { jobLogBatches(jobId: $j, fromSeq: $f) { seq service stream time text } }"
# The server sends a keep-alive every 15 s; a stream silent for longer than
# this is dead, and is resumed.
STREAM_IDLE_TIMEOUT = 45.0


@dataclass(frozen=True)
class LogLine:
    """One line of a job's output. ``seq`` numbers the job's lines from 1;
    ``stream`` is "stdout", "stderr" or "system" (a note from levers9: lines dropped by a log quota, long lines split)."""

    seq: int
    service: str
    stream: str
    time: str
    text: str

    def __str__(self) -> str:
        return self.text


class Job:
    """A submitted job, as last read from the server.

    Attributes: id, name, status ("PENDING", "RUNNING", "COMPLETE",
    "ERROR", "CANCELLED"), status_reason, queue (its name), created_at,
    started_at, finished_at (RFC 3339 strings or None) and services (dicts
    with name, status, statusReason and exitCode).
    """

    def __init__(self, client: "Client", data: Dict[str, Any]):
        self._client = client
        self.id: str = data["id"]
        self._update(data)

    def _update(self, data: Dict[str, Any]) -> None:
        self.name: str = data.get("name", "")
        self.status: str = data.get("status", "")
        self.status_reason: str = data.get("statusReason", "")
        self.queue: str = (data.get("queue") or {}).get("name", "")
        self.created_at: Optional[str] = data.get("createdAt")
        self.started_at: Optional[str] = data.get("startedAt")
        self.finished_at: Optional[str] = data.get("finishedAt")
        self.services: List[Dict[str, Any]] = data.get("services") or []

    def __repr__(self) -> str:
        return "Job(id=%r, status=%r)" % (self.id, self.status)

    @property
    def ended(self) -> bool:
        """Whether the job has ended (COMPLETE, ERROR or CANCELLED)."""
        return self.status in ENDED

    @property
    def exit_code(self) -> Optional[int]:
        """The first non-zero exit code of its services, 0 when every
        service exited with 0, None while unknown (not ended, or ended
        without an exit code, such as a job cancelled before it started;
        one cancelled while running has its signal's code, 143)."""
        codes = [s.get("exitCode") for s in self.services]
        for c in codes:
            if c:
                return c
        if self.ended and codes and all(c == 0 for c in codes):
            return 0
        return None

    def refresh(self) -> "Job":
        """Reads the job again; returns it. NotFound when it is gone or unseen."""
        data = self._client.graphql("query($id: ID!) { node(id: $id) { ... on Job { %s } } }" % JOB_FIELDS,
                                    {"id": self.id})
        if not data.get("node"):
            raise errors.NotFound("job %s not found" % self.id, code="NOT_FOUND")
        self._update(data["node"])
        return self

    def cancel(self) -> "Job":
        """Cancels the job; returns it with its new status."""
        data = self._client.graphql("mutation($id: ID!) { cancelJob(id: $id) { %s } }" % JOB_FIELDS, {"id": self.id})
        self._update(data["cancelJob"])
        return self

    @checked
    def wait(self, timeout: Optional[float] = None, poll: float = 0.1) -> "Job":
        """Waits until the job has ended and returns it.

        Raises TimeoutError after timeout seconds (None waits for ever).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = poll
        while not self.refresh().ended:
            if deadline is not None and time.monotonic() + interval > deadline:
                raise TimeoutError("job %s has not ended after %s s (status %s)" % (self.id, timeout, self.status))
            time.sleep(interval)
            interval = min(interval * 1.5, 2.0)
        return self

    @checked
    def logs(self, follow: bool = False, from_seq: int = 1, max_reconnects: Optional[int] = 10) -> Iterator[LogLine]:
        """Yields the job's output lines in order, from line from_seq on.

        With follow=False, the lines stored so far. With follow=True, the
        lines as they come over the server-sent events subscription, until
        the job has ended and its last line was sent; a dropped connection
        is resumed after the last line yielded, so no line is lost or
        repeated. After max_reconnects attempts in a row that brought no
        line (None: no limit) the last NetworkError is raised.
        """
        if not follow:
            yield from self._stored_logs(from_seq)
            return
        backoff = 0.25
        failures = 0
        while True:
            progressed = False
            try:
                for line in self._stream_logs(from_seq):
                    from_seq = line.seq + 1
                    progressed = True
                    yield line
                # The server completed the stream. It does so when the job
                # has ended, and when it dropped a slow subscriber: only
                # the job's state tells them apart.
                if self.refresh().ended:
                    return
            except (errors.NetworkError, OSError, ValueError, http.client.HTTPException, socket.timeout, sse.Dropped) as e:
                # Resume after the last line yielded, unless the server
                # has been unreachable for too long.
                failures = 0 if progressed else failures + 1
                if max_reconnects is not None and failures > max_reconnects:
                    if isinstance(e, errors.NetworkError):
                        raise
                    raise errors.NetworkError("following the logs of %s: %s" % (self.id, e or "stream dropped")) from None
            if progressed:
                backoff = 0.25
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _stored_logs(self, from_seq: int) -> Iterator[LogLine]:
        page = 1000
        while True:
            lines = self._client.graphql(_LOGS_QUERY, {"j": self.id, "f": from_seq, "n": page})["jobLogs"]
            for raw in lines:
                line = _line(raw)
                from_seq = line.seq + 1
                yield line
            if len(lines) < page:
                return

    def _stream_logs(self, from_seq: int) -> Iterator[LogLine]:
        """One jobLogBatches subscription over SSE; ends when the server completes it."""
        for data in sse.subscribe(self._client._http, _LOGS_SUB, {"j": self.id, "f": from_seq}, STREAM_IDLE_TIMEOUT):
            for line in data.get("jobLogBatches") or ():
                yield _line(line)



def _line(raw: Dict[str, Any]) -> LogLine:
    return LogLine(seq=int(raw["seq"]), service=raw["service"], stream=raw["stream"],
                   time=raw.get("time", ""), text=raw["text"])

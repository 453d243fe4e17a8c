"""GraphQL subscriptions over server-sent events (the server's
``Accept: text/event-stream`` on POST /graphql): each ``next`` event's
data, until the server sends ``complete``."""

import json
from typing import Any, Dict, Iterator, Optional

from . import errors

# An event's data line is at most this long (a batch of log lines is about
# 1 MiB of text; JSON escapes can make it a few times longer).
MAX_EVENT_LINE = 16 << 20


class Dropped(Exception):
    """The event stream ended without the server completing it."""


def subscribe(http, query: str, variables: Optional[Dict[str, Any]], timeout: float) -> Iterator[Dict[str, Any]]:
    """Yields the data of each event of the subscription ``query`` sent
    through ``http`` (the client's transport); returns when the server
    completes it, raises Dropped when the stream ends otherwise, a
    levers9.Error for an error the server sent, and socket.timeout when
    nothing (not even the server's keep-alive) came for timeout seconds."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode("utf-8")
    resp = http.request("POST", "/graphql", body, {"Content-Type": "application/json", "Accept": "text/event-stream"},
                        idempotent=True, timeout=timeout)
    with resp:
        if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
            doc = json.loads(resp.read(1 << 20).decode("utf-8") or "{}")
            if doc.get("errors"):
                raise errors.from_graphql(doc["errors"][0])
            raise errors.Error("the server answered without an event stream")
        event = ""
        while True:
            raw = resp.readline(MAX_EVENT_LINE)
            if not raw:
                raise Dropped()
            text = raw.decode("utf-8").rstrip("\r\n")
            if text.startswith("event:"):
                event = text[6:].strip()
                if event == "complete":
                    return
            elif text.startswith("data:") and event == "next":
                try:
                    doc = json.loads(text[5:])
                except ValueError:
                    raise Dropped() from None  # a line cut short
                if doc.get("errors"):
                    raise errors.from_graphql(doc["errors"][0])
                yield doc.get("data") or {}

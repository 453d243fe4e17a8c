"""Exceptions raised by the SDK.

Every error the server answers with carries its code (GraphQL
``extensions.code``, or the files API's ``{"error": {"code": ...}}``) and is
raised as the subclass of :class:`Error` for that code, with the server's
message.
"""

from typing import Any, Dict, Optional


class Error(Exception):
    """Base class of every levers9 error.

    Attributes:
        code: the server's error code (``"NOT_FOUND"``, ...), or None when
            the error did not come from the server.
        message: the server's message.
        field: the input field at fault, for ``BAD_USER_INPUT``.
        details: further facts from the server (``balance`` and
            ``required`` for ``INSUFFICIENT_TOKENS``).
        status: the HTTP status of the answer, when there was one.
    """

    def __init__(self, message: str, code: Optional[str] = None, field: Optional[str] = None,
                 details: Optional[Dict[str, Any]] = None, status: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.details = details or {}
        self.status = status

    def __str__(self) -> str:
        text = self.message
        if self.field and not text.startswith(self.field + ":"):
            text = "%s: %s" % (self.field, text)
        return "%s: %s" % (self.code, text) if self.code else text


class Unauthenticated(Error):
    """The token is missing, wrong, expired or revoked (``UNAUTHENTICATED``)."""


class Forbidden(Error):
    """The viewer may not do this (``FORBIDDEN``)."""


class NotFound(Error):
    """The object does not exist or is not visible to the viewer (``NOT_FOUND``)."""


class BadInput(Error):
    """The input is invalid; ``field`` names the culprit (``BAD_USER_INPUT``)."""


class InsufficientTokens(Error):
    """The payer cannot cover the job's start (``INSUFFICIENT_TOKENS``);
    ``details`` holds ``balance`` and ``required``."""


class RateLimited(Error):
    """The server asks the client to slow down (``RATE_LIMITED``)."""


class Unavailable(Error):
    """The server cannot serve the request now but may soon
    (``UNAVAILABLE``): its database is restarting or failing over (HTTP
    503, ``details["retryAfter"]`` seconds), or a node it needs is not
    connected. Safe requests were already retried for up to a minute."""


class NetworkError(Error):
    """The server could not be reached, even after retries."""


class ConfigError(Error):
    """The config file (~/.levers9/config) is unusable, or names no such context."""


_BY_CODE = {
    "UNAUTHENTICATED": Unauthenticated,
    "FORBIDDEN": Forbidden,
    "NOT_FOUND": NotFound,
    "BAD_USER_INPUT": BadInput,
    "INSUFFICIENT_TOKENS": InsufficientTokens,
    "RATE_LIMITED": RateLimited,
    "UNAVAILABLE": Unavailable,
}


def from_server(message: str, code: Optional[str], field: Optional[str] = None,
                details: Optional[Dict[str, Any]] = None, status: Optional[int] = None) -> Error:
    """Builds the exception for an error the server answered with."""
    cls = _BY_CODE.get(code or "", Error)
    return cls(message or "the server answered with an error", code=code, field=field,
               details=details, status=status)


def from_graphql(err: Dict[str, Any], status: Optional[int] = None) -> Error:
    """Builds the exception for one entry of a GraphQL ``errors`` list."""
    ext = dict(err.get("extensions") or {})
    code = ext.pop("code", None)
    field = ext.pop("field", None)
    return from_server(err.get("message", ""), code, field, ext, status)


class RemoteError(Error):
    """A function call failed in its container.

    Raised by ``.remote()``, ``FunctionCall.get()`` and the iterator of
    ``.map()``. Attributes:
        task_id: the failed call's task ID.
        kind: why it failed: "exception", "timeout", "cancelled",
            "container lost", ...
        traceback: the remote traceback text ("" when there is none).
        exception: the function's own exception, unpickled, when it
            pickled in the container and unpickles here; else None. It is
            also this error's ``__cause__``, so a printed traceback shows
            both, and ``isinstance(e.exception, ValueError)`` tells what
            the function raised.
    """

    def __init__(self, message: str, task_id: str = "", kind: str = "exception", traceback: str = "",
                 exception: Optional[BaseException] = None):
        super().__init__(message)
        self.task_id = task_id
        self.kind = kind
        self.traceback = traceback
        self.exception = exception

    def __str__(self) -> str:
        text = "%s failed: %s" % (self.task_id or "call", self.message)
        if self.traceback:
            text += "\n\nRemote traceback:\n" + self.traceback.rstrip("\n")
        return text

    def __reduce__(self):
        # Keep every attribute when the error itself is pickled (a function
        # that re-raises another call's error).
        return (_remote_error, (type(self), self.message, self.task_id, self.kind, self.traceback, self.exception))


def _remote_error(cls, message, task_id, kind, traceback, exception):
    return cls(message, task_id=task_id, kind=kind, traceback=traceback, exception=exception)


class FunctionTimeoutError(RemoteError):
    """The call ran longer than its function's ``timeout`` (kind "timeout").
    Waiting on the client side (``get(timeout=...)``) raises the built-in
    TimeoutError instead: the call goes on."""


class CallCancelledError(RemoteError):
    """The call was cancelled (``call.cancel()``, its map or app stopped)."""

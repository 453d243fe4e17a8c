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

"""Arguments and results on the wire: pickles, inline or as blobs.

A payload is ``{"data": "<base64 of the pickle>"}`` or, when the pickle is
larger than the inline limit, ``{"blob": "<hex sha256>"}`` after the bytes
were uploaded to blob storage. Arguments are ``pickle.dumps((args,
kwargs), protocol=4)``; results are the pickled return value.
"""

import base64
import hashlib
import pickle
from typing import Any, Callable, Dict, Optional, Tuple

from . import errors

# INLINE_LIMIT is the largest pickle carried inline (the server's limit);
# larger ones go to blob storage.
INLINE_LIMIT = 1 << 20
PROTOCOL = 4

Put = Callable[[str, bytes], None]   # put(sha256, data): upload a payload blob
Get = Callable[[str], bytes]         # get(sha256) -> data


def dumps(value: Any) -> bytes:
    """Pickles value, with a clear error for what does not pickle."""
    try:
        return pickle.dumps(value, protocol=PROTOCOL)
    except Exception as e:  # pickle raises many kinds (TypeError, PicklingError, AttributeError)
        raise errors.BadInput("cannot pickle %s: %s" % (type(value).__name__, e), code="BAD_USER_INPUT",
                              field="args") from None


def encode(data: bytes, put: Optional[Put], limit: int = INLINE_LIMIT) -> Dict[str, str]:
    """The payload for pickled bytes: inline up to limit bytes, else uploaded with put."""
    if len(data) <= limit:
        return {"data": base64.b64encode(data).decode("ascii")}
    if put is None:
        raise errors.BadInput("payload of %d bytes is over the inline limit and cannot be uploaded here" % len(data),
                              code="BAD_USER_INPUT", field="args")
    digest = hashlib.sha256(data).hexdigest()
    put(digest, data)
    return {"blob": digest}


def encode_args(args: Tuple[Any, ...], kwargs: Dict[str, Any], put: Optional[Put],
                limit: int = INLINE_LIMIT) -> Dict[str, str]:
    return encode(dumps((tuple(args), dict(kwargs))), put, limit)


def raw(payload: Optional[Dict[str, Any]], get: Optional[Get]) -> bytes:
    """The pickled bytes of a payload, downloading a blob with get."""
    if not payload:
        raise errors.Error("the server sent no payload")
    if payload.get("blob"):
        if get is None:
            raise errors.Error("payload blob %s cannot be fetched here" % payload["blob"])
        data = get(payload["blob"])
        if hashlib.sha256(data).hexdigest() != payload["blob"]:
            raise errors.Error("payload blob %s: its bytes do not match the hash" % payload["blob"])
        return data
    return base64.b64decode(payload.get("data") or "")


def decode(payload: Optional[Dict[str, Any]], get: Optional[Get]) -> Any:
    return pickle.loads(raw(payload, get))


def decode_args(payload: Optional[Dict[str, Any]], get: Optional[Get]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    args, kwargs = decode(payload, get)
    return tuple(args), dict(kwargs)


def failure_error(task: Dict[str, Any]) -> errors.RemoteError:
    """The RemoteError for an ended task that did not complete (Task JSON,
    GraphQL or runner API: errorKind, errorMessage, errorTraceback,
    errorException)."""
    kind = task.get("errorKind") or ("cancelled" if task.get("state") == "CANCELLED" else "exception")
    message = task.get("errorMessage") or kind
    exc = None
    if task.get("errorException"):
        try:
            exc = pickle.loads(base64.b64decode(task["errorException"]))
        except Exception:  # its class may not exist here: the text is still there
            exc = None
        if not isinstance(exc, BaseException):
            exc = None
    cls = errors.RemoteError
    if kind == "timeout":
        cls = errors.FunctionTimeoutError
    elif kind == "cancelled" or task.get("state") == "CANCELLED":
        cls = errors.CallCancelledError
    err = cls(message, task_id=task.get("id", ""), kind=kind, traceback=task.get("errorTraceback") or "",
              exception=exc)
    err.__cause__ = exc
    return err


def outcome(task: Dict[str, Any], get: Optional[Get]) -> Any:
    """The result of an ended task, or raises its RemoteError."""
    if task.get("state") == "COMPLETE":
        return decode(task.get("result"), get)
    raise failure_error(task)

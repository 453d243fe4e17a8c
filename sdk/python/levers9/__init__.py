"""levers9: the Python SDK of the levers9 GPU compute platform.

Standard library only. Start with :class:`Client`::

    import levers9
    client = levers9.Client()            # LEVERS9_SERVER/LEVERS9_TOKEN, or ~/.levers9/config
    job = client.submit_job(["echo", "hello"])
    for line in job.logs(follow=True):
        print(line.text)
    print(job.wait().exit_code)
"""

from .blueprint import Blueprint
from .args import UnknownArgument
from .buckets import Bucket, Buckets, Object
from .client import Client, Estimate
from .config import Connection, config_path, resolve
from .errors import (BadInput, CallCancelledError, ConfigError, Error, Forbidden, FunctionTimeoutError,
                     InsufficientTokens, NetworkError, NotFound, RateLimited, RemoteError, Unauthenticated,
                     Unavailable)
from .functions import App, Deployed, Function, FunctionCall, FunctionMap
from .jobs import Job, LogLine
from .realtime import WebSocketDisconnect
from .sandbox import Process, Sandbox, Tunnel

__version__ = "0.1.0"

__all__ = [
    "Client", "Job", "LogLine", "Estimate", "Bucket", "Buckets", "Object", "UnknownArgument", "Connection", "config_path", "resolve",
    "Error", "Unauthenticated", "Forbidden", "NotFound", "BadInput", "InsufficientTokens", "RateLimited",
    "Unavailable", "NetworkError", "ConfigError", "App", "Function", "FunctionCall", "FunctionMap", "RemoteError",
    "FunctionTimeoutError", "CallCancelledError", "Deployed", "WebSocketDisconnect", "Blueprint", "Sandbox",
    "Process", "Tunnel",
]

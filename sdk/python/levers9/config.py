"""Contexts: named connections shared with the ``levers9`` CLI.

The file is ``~/.levers9/config`` (or ``$LEVERS9_CONFIG``), JSON, mode 0600::

    {"current": "prod",
     "contexts": {"prod": {"server": "https://...", "token": "lv9_...",
                           "queue": "gpu", "project": "vision",
                           "environment": "main"}}}

A connection is resolved as the CLI resolves it: explicit arguments, then
the ``LEVERS9_SERVER`` and ``LEVERS9_TOKEN`` environment variables, then the
named context (or the current one). The file is read only when something
is still open, so scripts that set both variables never depend on it.
"""

import json
import os
import stat
from dataclasses import dataclass
from typing import Optional

from .errors import ConfigError

DEFAULT_SERVER = "http://127.0.0.1:8080"


@dataclass
class Connection:
    """Where and as whom a client talks, with submission defaults."""

    server: str
    token: str
    queue: str = ""
    project: str = ""
    environment: str = ""


def config_path() -> str:
    """The config file's path: ``$LEVERS9_CONFIG``, else ``~/.levers9/config``."""
    return os.environ.get("LEVERS9_CONFIG") or os.path.join(os.path.expanduser("~"), ".levers9", "config")


def load_config() -> dict:
    """Reads the config file; a missing file is an empty config.

    Raises ConfigError when the file is readable by group or others (it
    holds API tokens) or is not valid JSON.
    """
    path = config_path()
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return {"contexts": {}}
    except OSError as e:
        raise ConfigError("reading the config file %s: %s" % (path, e)) from None
    with os.fdopen(fd, "rb") as f:
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        if mode & 0o077:
            raise ConfigError(
                "%s has mode %04o but holds API tokens: it must be 0600 (run chmod 600 %s, "
                "or any levers9 context or login command, which repairs it)" % (path, mode, path))
        try:
            cfg = json.loads(f.read(1 << 20).decode("utf-8"))
        except ValueError as e:
            raise ConfigError("%s is not a levers9 config file: %s" % (path, e)) from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("contexts", {}), dict):
        raise ConfigError("%s is not a levers9 config file" % path)
    cfg.setdefault("contexts", {})
    return cfg


def resolve(context: Optional[str] = None, server: Optional[str] = None,
            token: Optional[str] = None) -> Connection:
    """Resolves a connection the way the CLI does (see the module docs)."""
    server = server or os.environ.get("LEVERS9_SERVER", "")
    token = token or os.environ.get("LEVERS9_TOKEN", "")
    conn = Connection(server=server, token=token)
    if context or not server or not token:
        cfg = load_config()
        name = context or cfg.get("current", "")
        entry = cfg["contexts"].get(name)
        if context and entry is None:
            raise ConfigError("no context named %r (levers9 context list shows them)" % context)
        entry = entry or {}
        conn.server = conn.server or entry.get("server", "")
        conn.token = conn.token or entry.get("token", "")
        conn.queue = entry.get("queue", "")
        conn.project = entry.get("project", "")
        conn.environment = entry.get("environment", "")
    conn.server = (conn.server or DEFAULT_SERVER).rstrip("/")
    return conn

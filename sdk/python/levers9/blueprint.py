"""Blueprints: what is installed in a container, declared in code, built
once per step and reused.

::

    image = (levers9.Blueprint.debian_slim(python="3.12")
             .apt_install("ffmpeg")
             .pip_install("pillow")
             .add_local_dir("./weights", "/weights"))
    image.build()          # or let @app.function(blueprint=image) / Sandbox.create build it

A Blueprint is immutable: every method returns a new one, so a base can be
shared by several blueprints. Each step has a key, the hash of the previous
step's key and the step itself (with the content of the files it reads:
a requirements file's text, the hash of a local folder's zip), so a
changed step rebuilds from that step on only; the server computes the same
keys (:attr:`Blueprint.keys` shows them).
"""

import hashlib
import io
import json
import os
import stat
import sys
import threading
import time
import zipfile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import errors

# The field order of a step (the server's wire.BuildStep): the keys hash
# the JSON of a step in this order.
STEP_FIELDS = ("kind", "ref", "suite", "mirror", "packages", "requirements", "commands", "code", "path", "env")
BASE_KINDS = ("REGISTRY", "DEBOOTSTRAP")
MAX_ZIP = 256 << 20  # a code blob's limit
_EPOCH = (1980, 1, 1, 0, 0, 0)

BLUEPRINT_FIELDS = "id key image source state failure stepsBuilt readyAt buildJob { id status }"


def _strings(what: str, items: Iterable[Any]) -> List[str]:
    out = []
    for s in items:
        if not isinstance(s, str) or not s.strip():
            raise errors.BadInput("%s: give non-empty strings, not %r" % (what, s), code="BAD_USER_INPUT", field=what)
        out.append(s)
    if not out:
        raise errors.BadInput("%s: give at least one" % what, code="BAD_USER_INPUT", field=what)
    return out


def _abs_path(what: str, path: Any) -> str:
    if not isinstance(path, str) or not path.startswith("/"):
        raise errors.BadInput("%s: give an absolute path in the image, such as '/app', not %r" % (what, path),
                              code="BAD_USER_INPUT", field=what)
    return path


def canonical_json(step: Mapping[str, Any]) -> str:
    """A step's JSON as the server's encoding/json writes a wire.BuildStep
    (fields in order, empty ones left out, <>& escaped), which its key
    hashes."""
    ordered = {k: step[k] for k in STEP_FIELDS if step.get(k)}
    ordered["kind"] = step["kind"]
    ordered = {k: ordered[k] for k in STEP_FIELDS if k in ordered}
    text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    return text


def step_keys(steps: Sequence[Mapping[str, Any]]) -> List[str]:
    """The key of each step: key_0 = sha256("levers9-blueprint-v1\\n" +
    JSON(step_0)), key_i = sha256(key_{i-1} + "\\n" + JSON(step_i))."""
    keys: List[str] = []
    prev = "levers9-blueprint-v1"
    for s in steps:
        prev = hashlib.sha256((prev + "\n" + canonical_json(s)).encode("utf-8")).hexdigest()
        keys.append(prev)
    return keys


def zip_entries(entries: Sequence[Tuple[str, str]]) -> Tuple[bytes, str]:
    """A deterministic zip of (archive name, local path) pairs: sorted by
    name, timestamps fixed at 1980-01-01, modes 0644 or 0755; returns the
    bytes and their hex SHA-256 (the same files give the same bytes)."""
    buf = io.BytesIO()
    total = 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, path in sorted(entries):
            st = os.stat(path)
            total += st.st_size
            if total > MAX_ZIP:
                raise errors.BadInput("the files copied into a blueprint total more than 256 MiB: put large data "
                                      "in a bucket instead", code="BAD_USER_INPUT", field="add_local_dir")
            info = zipfile.ZipInfo(arc, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the mode bits mean what they say
            info.external_attr = (stat.S_IFREG | (0o755 if st.st_mode & 0o111 else 0o644)) << 16
            with open(path, "rb") as f:
                zf.writestr(info, f.read())
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


class Blueprint:
    """An image declared step by step. Start from :meth:`debian_slim`,
    :meth:`from_registry` or :meth:`debootstrap`; each other method adds a
    step and returns a new Blueprint (this one is unchanged).

    After :meth:`build` (done for you by deploys and sandboxes): ``id``,
    ``key``, ``image`` and ``state`` ("READY").
    """

    def __init__(self, _steps: Tuple[Tuple[Tuple[str, Any], ...], ...] = (),
                 _blobs: Tuple[Tuple[str, bytes], ...] = ()):
        # Steps as tuples of (field, value) with tuple values: immutable.
        self._steps = _steps
        self._blobs = _blobs  # (hash, zip) of COPY steps, uploaded at build
        self.id: Optional[str] = None
        self.state: Optional[str] = None
        self.image: Optional[str] = None
        self.failure: str = ""
        self._key: Optional[str] = None
        self._lock = threading.Lock()

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # Bases

    @classmethod
    def debian_slim(cls, python: str = "3.12") -> "Blueprint":
        """The official python:VERSION-slim image (from a registry the
        nodes reach)."""
        if not isinstance(python, str) or not python or any(c not in "0123456789." for c in python):
            raise errors.BadInput("python: give a version such as '3.12', not %r" % (python,),
                                  code="BAD_USER_INPUT", field="python")
        return cls.from_registry("python:%s-slim" % python)

    @classmethod
    def from_registry(cls, ref: str) -> "Blueprint":
        """An image from a registry (or already on the node), such as
        'ubuntu:24.04'."""
        if not isinstance(ref, str) or not ref.strip():
            raise errors.BadInput("from_registry needs an image reference such as 'ubuntu:24.04'",
                                  code="BAD_USER_INPUT", field="ref")
        return cls()._add({"kind": "REGISTRY", "ref": ref.strip()}, base=True)

    @classmethod
    def debootstrap(cls, suite: str = "bookworm", packages: Sequence[str] = ("python3",),
                    mirror: Optional[str] = None) -> "Blueprint":
        """A Debian root file system made by debootstrap (minbase plus
        packages) on the building node: no registry needed."""
        if not isinstance(suite, str) or not suite.strip():
            raise errors.BadInput("debootstrap needs a suite such as 'bookworm'", code="BAD_USER_INPUT", field="suite")
        if isinstance(packages, str):
            packages = [packages]
        step: Dict[str, Any] = {"kind": "DEBOOTSTRAP", "suite": suite.strip(),
                                "packages": list(_strings("packages", packages)) if packages else []}
        if mirror:
            step["mirror"] = mirror
        return cls()._add(step, base=True)

    # Steps

    def apt_install(self, *packages: str) -> "Blueprint":
        """apt-get install the packages."""
        return self._add({"kind": "APT", "packages": _strings("apt_install", packages)})

    def pip_install(self, *packages: str) -> "Blueprint":
        """pip install the packages (pin versions to keep the step's key)."""
        return self._add({"kind": "PIP", "packages": _strings("pip_install", packages)})

    def pip_install_from_requirements(self, path: str) -> "Blueprint":
        """pip install -r a local requirements file (its content is part
        of the step, so editing it rebuilds from here)."""
        try:
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise errors.BadInput("reading %s: %s" % (path, e.strerror or e), code="BAD_USER_INPUT",
                                  field="requirements") from None
        return self._add({"kind": "PIP", "requirements": text})

    def run_commands(self, *commands: str) -> "Blueprint":
        """Shell commands, run in order in one layer."""
        return self._add({"kind": "RUN", "commands": _strings("run_commands", commands)})

    def add_local_dir(self, local: str, remote: str) -> "Blueprint":
        """Copies a local folder into the image at remote (its files are
        zipped now: a changed file changes the step's key). Left out as in
        code packages: .git/, __pycache__/, venvs, node_modules/, *.pyc."""
        from . import packaging
        remote = _abs_path("add_local_dir", remote)
        if not os.path.isdir(local):
            raise errors.BadInput("add_local_dir: %s is not a folder" % local, code="BAD_USER_INPUT",
                                  field="add_local_dir")
        data, digest = zip_entries(list(packaging.files(local)))
        return self._add({"kind": "COPY", "code": digest, "path": remote}, blob=(digest, data))

    def add_local_file(self, local: str, remote: str) -> "Blueprint":
        """Copies a local file into the image: remote is the file's path
        there (or a folder, ending in '/', to keep the file's name)."""
        remote = _abs_path("add_local_file", remote)
        if not os.path.isfile(local):
            raise errors.BadInput("add_local_file: %s is not a file" % local, code="BAD_USER_INPUT",
                                  field="add_local_file")
        if remote.endswith("/"):
            folder, name = remote.rstrip("/") or "/", os.path.basename(local)
        else:
            folder, name = os.path.dirname(remote) or "/", os.path.basename(remote)
        data, digest = zip_entries([(name, local)])
        return self._add({"kind": "COPY", "code": digest, "path": folder}, blob=(digest, data))

    def env(self, variables: Mapping[str, str]) -> "Blueprint":
        """Sets environment variables (sorted by name, so a dict's order
        does not change the key)."""
        if not isinstance(variables, Mapping) or not variables:
            raise errors.BadInput("env: give a dict of names to values", code="BAD_USER_INPUT", field="env")
        env = []
        for k in sorted(variables):
            v = variables[k]
            if not isinstance(k, str) or not k or not isinstance(v, str):
                raise errors.BadInput("env: names and values are strings, not %r=%r" % (k, v), code="BAD_USER_INPUT",
                                      field="env")
            env.append({"name": k, "value": v})
        return self._add({"kind": "ENV", "env": env})

    def workdir(self, path: str) -> "Blueprint":
        """The working directory of later steps and of containers."""
        return self._add({"kind": "WORKDIR", "path": _abs_path("workdir", path)})

    def _add(self, step: Dict[str, Any], base: bool = False, blob: Optional[Tuple[str, bytes]] = None) -> "Blueprint":
        if base != (not self._steps):
            if base:
                raise errors.BadInput("a base (from_registry, debian_slim, debootstrap) comes first, once",
                                      code="BAD_USER_INPUT", field="steps")
            raise errors.BadInput("start a blueprint from a base: Blueprint.debian_slim(), .from_registry(ref) or "
                                  ".debootstrap()", code="BAD_USER_INPUT", field="steps")
        frozen = tuple((k, _freeze(step[k])) for k in STEP_FIELDS if step.get(k))
        blobs = self._blobs + ((blob,) if blob else ())
        return Blueprint(self._steps + (frozen,), blobs)

    # What it is

    @property
    def steps(self) -> List[Dict[str, Any]]:
        """Its steps as BlueprintStepInput dicts (new copies)."""
        return [{k: _thaw(v) for k, v in s} for s in self._steps]

    @property
    def keys(self) -> List[str]:
        """The key of each step, as the server computes them."""
        return step_keys(self.steps)

    @property
    def key(self) -> Optional[str]:
        """The last step's key (the blueprint's), or the server's for a
        blueprint read from it (a snapshot)."""
        if self._key:
            return self._key
        return self.keys[-1] if self._steps else None

    def __repr__(self) -> str:
        if self.id:
            return "Blueprint(id=%r, state=%r)" % (self.id, self.state)
        return "Blueprint(%s)" % ", ".join(dict(s)["kind"] for s in self._steps)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Blueprint):
            return NotImplemented
        if not self._steps and not other._steps:
            return self.id == other.id
        return self._steps == other._steps

    def __hash__(self) -> int:
        return hash(self._steps) if self._steps else hash(self.id)

    # Building

    @classmethod
    def from_id(cls, blueprint_id: str, client=None) -> "Blueprint":
        """A blueprint already on the server (built, or a snapshot)."""
        client = _client(client)
        data = client.graphql("query($id: ID!) { blueprint(id: $id) { %s } }" % BLUEPRINT_FIELDS,
                              {"id": blueprint_id})["blueprint"]
        if not data:
            raise errors.NotFound("blueprint %s not found" % blueprint_id, code="NOT_FOUND")
        return cls._of(data)

    @classmethod
    def _of(cls, data: Dict[str, Any]) -> "Blueprint":
        bp = cls()
        bp._set(data)
        return bp

    def _set(self, data: Dict[str, Any]) -> None:
        self.id = data.get("id") or self.id
        self.state = data.get("state") or self.state
        self.image = data.get("image") or self.image
        self.failure = data.get("failure") or ""
        if data.get("key"):
            self._key = data["key"]

    def build(self, client=None, queue: Optional[str] = None, logs: bool = True, timeout: float = 3600,
              project: Optional[str] = None, cpu: Optional[float] = None, memory: Optional[int] = None,
              poll: float = 0.5) -> "Blueprint":
        """Builds the blueprint (only the steps no earlier build of the
        tenant made) and returns it, READY, with its ``id``. Its files are
        uploaded first (once). With logs, the build job's output is
        written to stderr while it runs. Raises levers9.Error when the
        build failed, TimeoutError after timeout seconds."""
        with self._lock:
            if self.id and self.state == "READY":
                return self
            if not self._steps:
                if self.id:  # read from the server: wait for it
                    return self._wait(_client(client), None, logs, timeout, poll)
                raise errors.BadInput("an empty blueprint: start from Blueprint.debian_slim() or another base",
                                      code="BAD_USER_INPUT", field="steps")
            client = _client(client)
            if self._blobs:
                from .backend import GraphQLBackend
                be = GraphQLBackend(client)
                for digest, data in dict(self._blobs).items():
                    be.upload_code(digest, data)
            i: Dict[str, Any] = {"steps": self.steps}
            if queue:
                i["queue"] = queue
            if project or getattr(client, "default_project", None):
                i["project"] = project or client.default_project
            if cpu is not None:
                i["cpu"] = cpu
            if memory is not None:
                i["memoryMiB"] = int(memory)
            # The blueprint is unique per key: asking twice finds the first.
            data = client.graphql("mutation($i: BuildBlueprintInput!) { buildBlueprint(input: $i) { %s } }"
                                  % BLUEPRINT_FIELDS, {"i": i}, idempotent=True)["buildBlueprint"]
            self._set(data)
            return self._wait(client, data, logs, timeout, poll)

    def _wait(self, client, data: Optional[Dict[str, Any]], logs: bool, timeout: float, poll: float) -> "Blueprint":
        deadline = time.monotonic() + timeout
        stop = threading.Event()
        follower: Optional[threading.Thread] = None
        try:
            while True:
                if data is None:
                    data = client.graphql("query($id: ID!) { blueprint(id: $id) { %s } }" % BLUEPRINT_FIELDS,
                                          {"id": self.id})["blueprint"]
                    if not data:
                        raise errors.NotFound("blueprint %s not found" % self.id, code="NOT_FOUND")
                    self._set(data)
                if self.state == "READY":
                    return self
                if self.state == "FAILED":
                    raise errors.Error("blueprint %s (%s) failed to build: %s"
                                       % (self.id, (self.key or "")[:12], self.failure or "no reason given"))
                job = (data.get("buildJob") or {}).get("id")
                if logs and follower is None and job:
                    follower = threading.Thread(target=_follow, args=(client, job, stop), daemon=True,
                                                name="levers9-build-logs")
                    follower.start()
                if time.monotonic() >= deadline:
                    raise TimeoutError("blueprint %s is still %s after %s s" % (self.id, self.state, timeout))
                time.sleep(poll)
                poll = min(poll * 1.5, 2.0)
                data = None
        finally:
            stop.set()
            if follower is not None:
                follower.join(2.0)  # the last lines, when the job ends with the build


def _follow(client, job_id: str, stop: threading.Event) -> None:
    """Writes a build job's log to stderr until it ends or stop is set."""
    from .jobs import Job
    try:
        for line in Job(client, {"id": job_id}).logs(follow=True):
            sys.stderr.write(line.text + "\n")
            sys.stderr.flush()
            if stop.is_set():
                break
    except Exception as e:  # the logs are a courtesy: the build goes on
        if not stop.is_set():
            sys.stderr.write("levers9: following the build's log stopped: %s\n" % e)


def _client(client):
    if client is None:
        from .client import Client
        client = Client()
    return client


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def _thaw(v: Any) -> Any:
    if isinstance(v, tuple):
        if v and all(isinstance(x, tuple) and len(x) == 2 and x[0] in ("name", "value") for x in v):
            return dict(v)
        return [_thaw(x) for x in v]
    return v

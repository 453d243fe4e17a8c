"""Serverless functions: App, Function, FunctionCall, FunctionMap.

::

    app = levers9.App("vision")

    @app.function(queue="gpu", gpu="H100", timeout=600, retries=2)
    def embed(path): ...

    @app.local_entrypoint()
    def main():
        print(embed.remote("a.jpg"))

``python -m levers9 run app.py`` deploys the app (ephemeral: stopped when
the entrypoint returns), then runs ``main`` here. Inside a function's
container the same calls go through the runner API.
"""

import contextlib
import inspect
import os
import re
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import backend as backends
from . import errors, payload
from .args import unknown

# DEAD: a task-queue item that failed every attempt (a dead letter).
ENDED = ("COMPLETE", "ERROR", "CANCELLED", "DEAD")
# What a function is (the GraphQL enum FunctionKind).
KINDS = ("FUNCTION", "ENDPOINT", "ASGI", "REALTIME", "TASK_QUEUE", "CRON", "BOX")
# A box's ports: 1 to 16 of them.
MAX_BOX_PORTS = 16
# The most items one map takes (the server's limit per mapFunction).
MAX_MAP_ITEMS = 10_000
# Results asked for per mapResults request.
MAP_PAGE = 1000

_GPU = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(:[1-9][0-9]*)?$")
_METHOD = re.compile(r"^[A-Z]{1,16}$")
_CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def gpu_spec(gpu: Union[None, str, Sequence[str]]) -> Optional[str]:
    """The wire form of gpu=: "H100", "H100:2", or a preference list
    ["H100", "A100"] sent as "H100,A100" (the first type with free
    capacity wins). None: no GPU."""
    if gpu is None:
        return None
    items = [gpu] if isinstance(gpu, str) else list(gpu)
    if not items:
        raise errors.BadInput("gpu: give a type such as 'H100', 'H100:2' or a list of types", code="BAD_USER_INPUT",
                              field="gpu")
    for g in items:
        if not isinstance(g, str) or not _GPU.match(g):
            raise errors.BadInput("gpu: %r is not a GPU type such as 'H100' or 'H100:2'" % (g,), code="BAD_USER_INPUT",
                                  field="gpu")
    counts = {g.partition(":")[2] for g in items}
    if len(counts) > 1:
        raise errors.BadInput("gpu: the types of a preference list must ask for the same count", code="BAD_USER_INPUT",
                              field="gpu")
    return ",".join(items)


_DECORATOR = {"FUNCTION": "function", "ENDPOINT": "endpoint", "ASGI": "asgi", "REALTIME": "realtime",
              "TASK_QUEUE": "task_queue", "CRON": "schedule", "BOX": "box"}

# The arguments of each decorator besides function_options' (suggested
# for a misspelt one).
_DECORATOR_ARGS = {
    "FUNCTION": (), "ENDPOINT": ("method", "sync_timeout", "public"), "ASGI": ("sync_timeout", "public"),
    "REALTIME": ("sync_timeout", "public"), "TASK_QUEUE": (), "CRON": ("cron",), "BOX": ("ports",),
}
_DECORATOR_ARGS = {k: v + ("name", "secrets", "blueprint") for k, v in _DECORATOR_ARGS.items()}


def function_options(queue: Optional[str] = None, project: Optional[str] = None, image: Optional[str] = None,
                     gpu: Union[None, str, Sequence[str]] = None, cpu: Optional[float] = None,
                     memory: Optional[int] = None, timeout: Optional[int] = None, retries: Optional[int] = None,
                     max_containers: Optional[int] = None, min_containers: Optional[int] = None,
                     keep_warm: Optional[int] = None, concurrency: Optional[int] = None,
                     scaledown_window: Optional[int] = None) -> Dict[str, Any]:
    """The wire form (FunctionInput fields) of the options every kind of
    function takes; a keyword not listed here is a TypeError."""
    spec: Dict[str, Any] = {"queue": queue, "project": project, "image": image, "gpu": gpu_spec(gpu)}
    for key, value in (("cpu", cpu), ("memoryMiB", memory), ("timeoutSeconds", timeout), ("retries", retries),
                       ("maxContainers", max_containers), ("minContainers", min_containers),
                       ("keepWarm", keep_warm), ("concurrency", concurrency),
                       ("scaledownWindowSeconds", scaledown_window)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise errors.BadInput("%s must be a number >= 0, not %r" % (key, value), code="BAD_USER_INPUT",
                                      field=key)
            if key != "cpu" and value != int(value):
                raise errors.BadInput("%s must be a whole number, not %r" % (key, value), code="BAD_USER_INPUT",
                                      field=key)
            spec[key] = value if key == "cpu" else int(value)
    return spec


_OPTION_NAMES = tuple(inspect.signature(function_options).parameters)


def secret_names(secrets: Union[None, str, Sequence[str]]) -> Optional[List[str]]:
    """The names of the secrets a function asks for (one name alone is a
    list of one); None when it asks for none."""
    if secrets is None:
        return None
    items = [secrets] if isinstance(secrets, str) else list(secrets)
    for s in items:
        if not isinstance(s, str) or not s.strip():
            raise errors.BadInput("secrets: give secret names such as ['hf'], not %r" % (s,), code="BAD_USER_INPUT",
                                  field="secrets")
    return items or None


def check_cron(expr: str) -> str:
    """A light check of a cron expression: five fields or a descriptor
    (@hourly, @every 10m); the server parses it for real."""
    if not isinstance(expr, str) or not expr.strip():
        raise errors.BadInput("schedule needs cron=, such as '*/15 * * * *'", code="BAD_USER_INPUT", field="cron")
    expr = " ".join(expr.split())
    if expr.startswith(("TZ=", "CRON_TZ=")):
        raise errors.BadInput("cron %r: schedules are always UTC, drop the time zone" % expr, code="BAD_USER_INPUT",
                              field="cron")
    if expr.startswith("@"):
        if expr in _CRON_DESCRIPTORS or (expr.startswith("@every ") and len(expr) > len("@every ")):
            return expr
        raise errors.BadInput("cron %r: descriptors are %s or '@every 10m'" % (expr, ", ".join(_CRON_DESCRIPTORS)),
                              code="BAD_USER_INPUT", field="cron")
    if len(expr.split(" ")) != 5:
        raise errors.BadInput("cron %r: give five fields (minute hour day-of-month month day-of-week, UTC), "
                              "such as '*/15 * * * *'" % expr, code="BAD_USER_INPUT", field="cron")
    return expr


def _method(method: Optional[str]) -> Optional[str]:
    if method is None:
        return None  # any method
    if not isinstance(method, str) or not _METHOD.match(method.upper()):
        raise errors.BadInput("method must be an HTTP method such as 'POST', not %r" % (method,),
                              code="BAD_USER_INPUT", field="method")
    return method.upper()


def _seconds(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.BadInput("%s must be a whole number of seconds >= 1, not %r" % (key, value),
                              code="BAD_USER_INPUT", field=key)
    return value


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise errors.BadInput("%s must be True or False, not %r" % (key, value), code="BAD_USER_INPUT", field=key)
    return value


class _Deployment:
    """An app deployed from here. For an ephemeral app a thread tells the
    server every 30 s that this client is alive: an ephemeral app silent
    for 5 minutes is stopped, so a script killed outright leaves no
    containers running. A deployed app (App.deploy) needs none."""

    HEARTBEAT_EVERY = 30.0

    def __init__(self, backend: "backends.GraphQLBackend", app_id: str, function_ids: Dict[str, str],
                 heartbeat: bool = True):
        self.backend = backend
        self.app_id = app_id
        self.function_ids = function_ids
        self._stop = threading.Event()
        self._beat: Optional[threading.Thread] = None
        if heartbeat:
            self._beat = threading.Thread(target=self._heartbeat, name="levers9-heartbeat", daemon=True)
            self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.HEARTBEAT_EVERY):
            try:
                self.backend.heartbeat_app(self.app_id)
            except Exception:  # a missed beat is retried; the grace is 10 of them
                pass

    def close(self) -> None:
        self._stop.set()


class Deployed:
    """What a deploy made: the app (app_id, name, state), its version and
    one dict per deployment of that version in functions (id, name, kind,
    deployment: the name in its URLs, urls)."""

    def __init__(self, app: Dict[str, Any]):
        self.app_id = app["id"]
        self.name = app.get("name", "")
        self.state = app.get("state", "")
        self.version = int(app.get("version") or 1)
        # The app's functions include older versions': keep this one's.
        self.functions = [f for f in app.get("functions") or [] if int(f.get("version") or self.version) == self.version]

    def __repr__(self) -> str:
        return "Deployed(%r, version=%d)" % (self.name, self.version)

    @property
    def urls(self) -> Dict[str, List[str]]:
        """The URLs of each deployment, by function name."""
        return {f["name"]: list(f.get("urls") or []) for f in self.functions}


class App:
    """A named group of functions deployed and stopped together.

    Args:
        name: the app's name.
        client: the levers9.Client deployments use (default: ``levers9.Client()``).
    """

    def __init__(self, name: str, client=None):
        if not name or not isinstance(name, str):
            raise errors.BadInput("an app needs a name", code="BAD_USER_INPUT", field="name")
        self.name = name
        self.client = client
        self.functions: Dict[str, "Function"] = {}
        self.entrypoints: Dict[str, Callable[..., Any]] = {}
        self._deployment: Optional[_Deployment] = None

    def __repr__(self) -> str:
        return "App(%r)" % self.name

    @property
    def app_id(self) -> Optional[str]:
        """The deployed app's ID, while it is deployed from here."""
        return self._deployment.app_id if self._deployment else None

    def function(self, *, name: Optional[str] = None, secrets: Optional[Sequence[str]] = None,
                 **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """Declares a function of this app (a decorator): called from
        Python with .remote(), .spawn() and .map().

        Options: queue and project (default: the client's context), image,
        gpu, cpu, memory (MiB), timeout and scaledown_window (seconds),
        retries, max_containers, min_containers, keep_warm, concurrency.
        Unset values take the server's defaults (1 CPU, 1024 MiB, 300 s,
        no retries, at most 10 containers, 1 call at a time, 60 s).
        name: its name (and the name in its URLs; default: the Python
        name). secrets: names of secrets whose keys its containers get as
        environment variables.
        """
        return self._decorator("FUNCTION", name, secrets, {}, options)

    def endpoint(self, *, method: Optional[str] = "POST", sync_timeout: int = 60, public: bool = False,
                 name: Optional[str] = None, secrets: Optional[Sequence[str]] = None,
                 **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """An HTTP endpoint (/endpoint/NAME): a JSON body is the function's
        one argument (no body: the query parameters are its keyword
        arguments) and its return value the JSON answer. method: the HTTP
        method it takes (None: any). A call still running after
        sync_timeout seconds answers 202 with its task's URL. public: its
        URLs answer callers without a token too. Other options as
        function()'s."""
        extra = {"httpMethod": _method(method), "syncTimeoutSeconds": _seconds("sync_timeout", sync_timeout),
                 "public": _flag("public", public)}
        return self._decorator("ENDPOINT", name, secrets, extra, options)

    def asgi(self, *, sync_timeout: int = 60, public: bool = False, name: Optional[str] = None,
             secrets: Optional[Sequence[str]] = None, **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """A whole ASGI application (FastAPI, Starlette, ...) under
        /endpoint/NAME: decorates a function without arguments that
        returns the app (called once per container). Options as
        endpoint()'s."""
        extra = {"syncTimeoutSeconds": _seconds("sync_timeout", sync_timeout), "public": _flag("public", public)}
        return self._decorator("ASGI", name, secrets, extra, options)

    def realtime(self, *, sync_timeout: int = 60, public: bool = False, name: Optional[str] = None,
                 secrets: Optional[Sequence[str]] = None,
                 **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """A WebSocket handler under /endpoint/NAME: decorates
        ``async def handler(ws)``, called once per connection (ws has
        receive_text(), receive_bytes(), receive(), send_text(),
        send_bytes(), send(), close(), path, query and headers). A
        connection waits up to sync_timeout seconds for a container.
        Options as endpoint()'s."""
        extra = {"syncTimeoutSeconds": _seconds("sync_timeout", sync_timeout), "public": _flag("public", public)}
        return self._decorator("REALTIME", name, secrets, extra, options)

    def task_queue(self, *, retries: int = 3, name: Optional[str] = None, secrets: Optional[Sequence[str]] = None,
                   **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """A task queue: background work, one call per item put with
        .put(item) (or POST /queue/NAME). An item is retried up to retries
        times with backoff; one that fails every attempt is kept as a
        dead letter (state DEAD). Options as function()'s."""
        options["retries"] = retries
        return self._decorator("TASK_QUEUE", name, secrets, {}, options)

    def schedule(self, *, cron: str, name: Optional[str] = None, secrets: Optional[Sequence[str]] = None,
                 **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """A function called without arguments on a cron schedule, in UTC
        ("*/15 * * * *", "@hourly"). A tick that finds the previous run
        still going is skipped. Options as function()'s."""
        return self._decorator("CRON", name, secrets, {"cron": check_cron(cron)}, options)

    def box(self, *, ports: Sequence[int], name: Optional[str] = None, secrets: Optional[Sequence[str]] = None,
            **options: Any) -> Callable[[Callable[..., Any]], "Function"]:
        """A long-running process with ports, reached through the relay at
        /box/NAME/PORT/...: decorates a function without arguments, called
        once per container in a thread. It may serve on its ports and
        block, or start a subprocess and return; the container stays up
        while every port answers. When the function raises, or a port
        stops answering, the container is replaced (while the box is in
        use). ports: 1 to 16 TCP ports (1-65535). Options as function()'s
        (blueprint= too)."""
        return self._decorator("BOX", name, secrets, {"ports": box_ports(ports)}, options)

    def _decorator(self, kind: str, name: Optional[str], secrets: Optional[Sequence[str]], extra: Dict[str, Any],
                   options: Dict[str, Any]) -> Callable[[Callable[..., Any]], "Function"]:
        options = dict(options)
        blueprint = options.pop("blueprint", None)
        if blueprint is not None:
            from .blueprint import Blueprint
            if not isinstance(blueprint, Blueprint):
                raise errors.BadInput("blueprint must be a levers9.Blueprint, not %r" % (blueprint,),
                                      code="BAD_USER_INPUT", field="blueprint")
            if options.get("image"):
                raise errors.BadInput("give image or blueprint, not both", code="BAD_USER_INPUT", field="blueprint")
        known = _OPTION_NAMES + _DECORATOR_ARGS[kind]
        for k in options:
            if k not in _OPTION_NAMES:
                raise unknown("@app.%s()" % _DECORATOR[kind], k, known)
        spec = function_options(**options)
        if name is not None and (not isinstance(name, str) or not name):
            raise errors.BadInput("name must be a non-empty string, not %r" % (name,), code="BAD_USER_INPUT",
                                  field="name")
        spec.update(extra)
        spec["kind"] = kind
        spec["deployment"] = name
        spec["secrets"] = secret_names(secrets)
        decorator = _DECORATOR[kind]

        def wrap(f: Callable[..., Any]) -> "Function":
            if isinstance(f, Function):
                f = f.raw_f
            if not callable(f):
                raise errors.BadInput("@app.%s() decorates a function" % decorator, code="BAD_USER_INPUT",
                                      field="function")
            qualname = getattr(f, "__qualname__", "")
            if "<locals>" in qualname or "<lambda>" in qualname:
                raise errors.BadInput("%s: a function must be defined at the top level of its module" % qualname,
                                      code="BAD_USER_INPUT", field="function")
            if kind == "REALTIME" and not inspect.iscoroutinefunction(f):
                raise errors.BadInput("@app.realtime() decorates an async function: async def %s(ws)"
                                      % getattr(f, "__name__", "handler"), code="BAD_USER_INPUT", field="function")
            fn = Function(self, f, name or f.__name__, spec)
            fn.blueprint = blueprint
            if fn.name in self.functions and self.functions[fn.name].raw_f is not f:
                raise errors.BadInput("app %s has two functions named %s" % (self.name, fn.name),
                                      code="BAD_USER_INPUT", field="name")
            self.functions[fn.name] = fn
            return fn

        return wrap

    def local_entrypoint(self, name: Optional[str] = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Marks the function ``python -m levers9 run app.py[::name]`` runs
        here, with the app deployed (a decorator; the function is returned
        as it is)."""

        def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
            self.entrypoints[name or f.__name__] = f
            return f

        return wrap

    # Deployment

    def _client(self):
        if self.client is None:
            from .client import Client
            self.client = Client()
        return self.client

    def _package(self, project_dir: str, module_names: Optional[Dict[str, str]],
                 log: Optional[Callable[[str], None]]) -> Tuple["backends.GraphQLBackend", str, List[Dict[str, Any]]]:
        """Packs project_dir and uploads it unless the server has it;
        returns the backend, the package's hash and the FunctionInputs."""
        from . import packaging
        if not self.functions:
            raise errors.BadInput("app %s has no functions: decorate them with @app.function()" % self.name,
                                  code="BAD_USER_INPUT", field="functions")
        client = self._client()
        build_blueprints(self.functions.values(), client)
        specs = []
        for fn in self.functions.values():
            module = fn.raw_f.__module__
            module = (module_names or {}).get(module, module)
            if module == "__main__":
                raise errors.BadInput("function %s is in __main__: run the script with `python -m levers9 run`"
                                      % fn.name, code="BAD_USER_INPUT", field="module")
            specs.append(fn._input(module, client))
        be = backends.GraphQLBackend(client)
        return be, packaging.upload(be, project_dir, log), specs

    def deploy_ephemeral(self, project_dir: str, module_names: Optional[Dict[str, str]] = None,
                         log: Optional[Callable[[str], None]] = None) -> str:
        """Packs project_dir, uploads it unless the server has it, and deploys
        the app as an ephemeral app; returns its ID. module_names maps a
        module as Python named it here (such as "__main__") to the name
        the container imports."""
        be, digest, specs = self._package(project_dir, module_names, log)
        app = be.deploy(self.name, digest, specs)
        self._deployment = _Deployment(be, app["id"], {f["name"]: f["id"] for f in app.get("functions") or []})
        return app["id"]

    def deploy(self, project_dir: Optional[str] = None, module_names: Optional[Dict[str, str]] = None,
               log: Optional[Callable[[str], None]] = None) -> "Deployed":
        """Deploys a new version of the app (created at its first deploy):
        its endpoints, task queues and schedules serve until stopped
        (``levers9 app stop``), older versions too. Returns the version and
        the URLs of each deployment; its functions can then be called
        from here (.remote(), .put(), ...). project_dir as for run()."""
        if project_dir is None:
            project_dir, names = _project_of(self)
            module_names = dict(names, **(module_names or {}))
        be, digest, specs = self._package(project_dir, module_names, log)
        app = be.deploy(self.name, digest, specs, deploy=True, fields=backends.DEPLOYED_FIELDS)
        result = Deployed(app)
        for f in result.functions:
            fn = self.functions.get(f["name"])
            if fn is not None:
                fn.urls = list(f.get("urls") or [])
        self._deployment = _Deployment(be, app["id"], {f["name"]: f["id"] for f in result.functions},
                                       heartbeat=False)
        return result

    def stop(self) -> None:
        """Stops the app deployed from here, every version of it (its
        running calls are cancelled)."""
        dep, self._deployment = self._deployment, None
        if dep is not None:
            dep.close()
            dep.backend.stop_app(dep.app_id)

    @contextlib.contextmanager
    def run(self, project_dir: Optional[str] = None):
        """Deploys the app ephemerally for the ``with`` block, for scripts
        run with plain ``python app.py``::

            if __name__ == "__main__":
                with app.run():
                    print(square.remote(3))

        The container imports the script as a module (``app`` for
        app.py), so anything at its top level runs there too: keep the
        ``with`` under ``if __name__ == "__main__"``. project_dir is the
        folder packed (default: the folder holding the functions' module,
        above its packages).
        """
        names: Dict[str, str] = {}
        if project_dir is None:
            project_dir, names = _project_of(self)
        self.deploy_ephemeral(project_dir, names)
        try:
            yield self
        finally:
            self.stop()


def box_ports(ports: Any) -> List[int]:
    """A box's ports, checked: 1 to 16 distinct TCP ports."""
    if isinstance(ports, int) and not isinstance(ports, bool):
        ports = [ports]
    try:
        if isinstance(ports, (str, bytes)):
            raise TypeError()
        out = list(ports)
    except TypeError:
        raise errors.BadInput("ports: give a list of TCP ports such as [8080], not %r" % (ports,),
                              code="BAD_USER_INPUT", field="ports") from None
    if not 1 <= len(out) <= MAX_BOX_PORTS:
        raise errors.BadInput("ports: a box has 1 to %d ports, not %d" % (MAX_BOX_PORTS, len(out)),
                              code="BAD_USER_INPUT", field="ports")
    for p in out:
        if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
            raise errors.BadInput("ports: %r is not a TCP port (1-65535)" % (p,), code="BAD_USER_INPUT", field="ports")
    if len(set(out)) != len(out):
        raise errors.BadInput("ports: %r lists a port twice" % (out,), code="BAD_USER_INPUT", field="ports")
    return out


def build_blueprints(fns: Iterable["Function"], client, log: Optional[Callable[[str], None]] = None) -> None:
    """Builds the blueprints of functions not built yet, each distinct one
    once (on the queue of the first function asking for it)."""
    built: Dict[Any, Any] = {}
    for fn in fns:
        bp = getattr(fn, "blueprint", None)
        if bp is None or (bp.id and bp.state == "READY"):
            continue
        same = built.get(bp)
        if same is not None:
            bp._set({"id": same.id, "state": same.state, "image": same.image, "key": same.key})
            continue
        bp.build(client=client, queue=fn.spec.get("queue") or getattr(client, "default_queue", None),
                 project=fn.spec.get("project"))
        built[bp] = bp


def with_defaults(d: Dict[str, Any], client) -> Dict[str, Any]:
    """A FunctionInput with the client's queue and project where it names none."""
    d = dict(d)
    d["queue"] = d.get("queue") or client.default_queue
    if not d.get("project"):
        d.pop("project", None)
        if client.default_project:
            d["project"] = client.default_project
    return d


def _project_of(app: App) -> Tuple[str, Dict[str, str]]:
    """The project folder of an app's functions and the module names the
    container imports, from where Python found their module."""
    fn = next(iter(app.functions.values()), None)
    if fn is None:
        raise errors.BadInput("app %s has no functions" % app.name, code="BAD_USER_INPUT", field="functions")
    module = fn.raw_f.__module__
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None)
    if not path:
        raise errors.BadInput("cannot tell which file module %s is in; pass project_dir=" % module,
                              code="BAD_USER_INPUT", field="project_dir")
    path = os.path.abspath(path)
    if module == "__main__":
        stem = os.path.splitext(os.path.basename(path))[0]
        return os.path.dirname(path), {"__main__": stem}
    root = os.path.dirname(path)
    depth = module.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    for _ in range(depth):
        root = os.path.dirname(root)
    return root, {}


class Function:
    """A function of an app: call it in its containers with remote(),
    spawn() or map(), put items on a task queue with put(); local() (or
    calling it) runs it here. Function.lookup() finds a deployed one."""

    def __init__(self, app: App, f: Optional[Callable[..., Any]], name: str, spec: Dict[str, Any]):
        self.app = app
        self.raw_f = f
        self.name = name
        self.spec = spec
        self.kind: str = spec.get("kind") or "FUNCTION"
        # The full URLs of its deployment, once deployed (App.deploy) or
        # looked up.
        self.urls: List[str] = []
        # The levers9.Blueprint its containers run (blueprint=), built at deploy.
        self.blueprint = None
        self._remote: Optional[Dict[str, Any]] = None  # a looked-up function: its id, client, backend
        self.__doc__ = getattr(f, "__doc__", None)
        self.__name__ = getattr(f, "__name__", name)
        self.__qualname__ = getattr(f, "__qualname__", name)
        self.__module__ = getattr(f, "__module__", None)
        self.__wrapped__ = f

    def __repr__(self) -> str:
        return "Function(%s.%s)" % (self.app.name, self.name)

    def __reduce__(self):
        if self._remote is not None:
            r = self._remote
            return (_looked_up, (self.app.name, self.name, r["id"], self.kind, r.get("version"), self.urls))
        # By reference, as pickle treats plain functions: the receiving
        # side imports the module and finds the same wrapper there.
        return (_function_at, (self.raw_f.__module__, self.raw_f.__qualname__))

    @classmethod
    def lookup(cls, app: str, name: str, version: Optional[int] = None, client=None) -> "Function":
        """The function (or deployment) name of the deployed app app, in
        version (default: the live one), through client (default:
        levers9.Client()); call it with remote(), spawn(), map() or put().
        NotFound when there is none the client may call."""
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            raise errors.BadInput("version must be a whole number >= 1, not %r" % (version,), code="BAD_USER_INPUT",
                                  field="version")
        if client is None:
            from .client import Client
            client = Client()
        be = backends.GraphQLBackend(client)
        f = be.lookup_function(app, name, version)
        fn = _looked_up(app, f.get("name") or name, f["id"], f.get("kind") or "FUNCTION", f.get("version"),
                        f.get("urls") or [])
        fn._remote["backend"] = be
        return fn

    def _input(self, module: str, client) -> Dict[str, Any]:
        """Its FunctionInput, the client's queue and project filling in."""
        return with_defaults(self._wire(module), client)

    def _wire(self, module: str) -> Dict[str, Any]:
        """Its FunctionInput as declared (no client defaults)."""
        d = {"name": self.name, "module": module, "qualname": self.raw_f.__qualname__}
        for k, v in self.spec.items():
            if v is not None:
                d[k] = v
        if self.blueprint is not None:
            # Built by the deploy (build_blueprints); levers9 serve's spec
            # process builds it here, with the default client.
            if not self.blueprint.id or self.blueprint.state != "READY":
                self.blueprint.build(queue=d.get("queue"), project=d.get("project"))
            d["blueprint"] = self.blueprint.id
        return d

    def _target(self) -> Tuple[backends.Backend, str]:
        if self._remote is not None:
            r = self._remote
            if r.get("backend") is None:  # unpickled: through this side's client
                from .client import Client
                r["backend"] = backends.GraphQLBackend(Client())
            return r["backend"], r["id"]
        if backends.in_container():
            return backends.runner_backend(), self.name
        dep = self.app._deployment
        if dep is None:
            raise errors.Error(
                "app %s is not deployed, so %s cannot run remotely: run the script with "
                "`python -m levers9 run app.py` (or `levers9 run app.py`), call it inside `with app.run():`, "
                "or find a deployed one with levers9.Function.lookup(%r, %r)"
                % (self.app.name, self.name, self.app.name, self.name))
        if self.name not in dep.function_ids:
            raise errors.Error("function %s was not deployed with app %s" % (self.name, self.app.name))
        return dep.backend, dep.function_ids[self.name]

    def local(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the function here, in this process."""
        if self.raw_f is None:
            raise errors.Error("%r was looked up: it runs in its containers only (remote(), spawn(), map(), put())"
                               % self)
        return self.raw_f(*args, **kwargs)

    __call__ = local

    def put(self, item: Any, idempotency_key: Optional[str] = None) -> "FunctionCall":
        """Adds item to this task queue: one call fn(item), durable, retried
        with backoff; returns its FunctionCall at once (get() waits; an
        item that failed every attempt raises RemoteError, its state
        DEAD). With an idempotency_key (at most 200 characters) a second
        put with the same key in the app returns the first call instead
        of adding another."""
        if self.kind != "TASK_QUEUE":
            raise errors.BadInput("%s is %s, not a task queue: put() adds items to @app.task_queue() functions; "
                                  "call it with remote() or spawn()" % (self.name, self.kind),
                                  code="BAD_USER_INPUT", field="function")
        if idempotency_key is not None and (not isinstance(idempotency_key, str) or not idempotency_key
                                            or len(idempotency_key) > 200):
            raise errors.BadInput("idempotency_key must be a string of 1 to 200 characters",
                                  code="BAD_USER_INPUT", field="idempotencyKey")
        be, ref = self._target()
        item_payload = payload.encode_args((item,), {}, be.put_blob, be.inline_limit)
        task = be.put(ref, item_payload, idempotency_key)
        return FunctionCall(be, task["id"], task)

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        """Runs one call in a container and returns its result; raises
        RemoteError (FunctionTimeoutError, CallCancelledError) when it
        failed."""
        return self.spawn(*args, **kwargs).get()

    def spawn(self, *args: Any, **kwargs: Any) -> "FunctionCall":
        """Starts one call and returns at once (get() waits for it)."""
        be, ref = self._target()
        task = be.call(ref, payload.encode_args(args, kwargs, be.put_blob, be.inline_limit))
        return FunctionCall(be, task["id"], task)

    def map(self, *iterables: Iterable[Any], order_outputs: bool = True, return_exceptions: bool = False,
            kwargs: Optional[Dict[str, Any]] = None) -> "FunctionMap":
        """Calls the function once per item (several iterables are zipped
        into positional arguments), as one server-side map.

        The map is created before this returns; the FunctionMap returned
        yields the results in input order (order_outputs=False: as they
        end). A failed item raises its RemoteError when reached, unless
        return_exceptions=True yields the error instead. At most 10,000
        items per map.
        """
        if not iterables:
            raise errors.BadInput("map needs an iterable", code="BAD_USER_INPUT", field="items")
        return self.starmap(zip(*iterables), order_outputs=order_outputs, return_exceptions=return_exceptions,
                            kwargs=kwargs)

    def starmap(self, items: Iterable[Sequence[Any]], order_outputs: bool = True, return_exceptions: bool = False,
                kwargs: Optional[Dict[str, Any]] = None) -> "FunctionMap":
        """Like map, each item being the tuple of positional arguments."""
        be, ref = self._target()
        encoded: List[Dict[str, str]] = []
        used = 0
        for args in items:
            if len(encoded) >= MAX_MAP_ITEMS:
                raise errors.BadInput("a map takes at most %d items: split the input" % MAX_MAP_ITEMS,
                                      code="BAD_USER_INPUT", field="items")
            data = payload.dumps((tuple(args), dict(kwargs or {})))
            inline = (len(data) + 2) // 3 * 4 + 16
            if len(data) <= be.inline_limit and used + inline <= be.map_budget:
                p = payload.encode(data, None)
                used += inline
            else:  # over the limit, or the request would grow too large
                p = payload.encode(data, be.put_blob, limit=-1)
                used += 90
            encoded.append(p)
        if not encoded:
            return FunctionMap(be, None, order_outputs=order_outputs, return_exceptions=return_exceptions, total=0)
        m = be.map(ref, encoded)
        return FunctionMap(be, m["id"], order_outputs=order_outputs, return_exceptions=return_exceptions,
                           total=m.get("total", len(encoded)))

    def map_resume(self, map_id: str, start: int = 0, order_outputs: bool = True,
                   return_exceptions: bool = False) -> "FunctionMap":
        """The results of an earlier map of this function, from item start."""
        be, _ = self._target()
        return FunctionMap(be, map_id, start=start, order_outputs=order_outputs, return_exceptions=return_exceptions)


def _function_at(module: str, qualname: str) -> Any:
    import importlib
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _looked_up(app: str, name: str, fn_id: str, kind: str, version: Optional[int] = None,
               urls: Optional[List[str]] = None) -> Function:
    """A Function bound to a deployed function's ID (Function.lookup, or
    one unpickled: it calls through this side's levers9.Client())."""
    fn = Function(App(app), None, name, {"kind": kind})
    fn._remote = {"id": fn_id, "version": version, "backend": None}
    fn.urls = list(urls or [])
    return fn


def _backend_for(client) -> backends.Backend:
    if backends.in_container() and client is None:
        return backends.runner_backend()
    if client is None:
        from .client import Client
        client = Client()
    return backends.GraphQLBackend(client)


class FunctionCall:
    """One call, started by spawn() (or found again with from_id)."""

    def __init__(self, be: backends.Backend, task_id: str, task: Optional[Dict[str, Any]] = None):
        self._backend = be
        self.object_id = task_id
        self._task = task or {"id": task_id}

    def __repr__(self) -> str:
        return "FunctionCall(%r)" % self.object_id

    @classmethod
    def from_id(cls, call_id: str, client=None) -> "FunctionCall":
        """The call with this ID (a task ID), through client (default:
        levers9.Client(), or the runner API inside a container)."""
        return cls(_backend_for(client), call_id)

    @property
    def state(self) -> str:
        """The state last seen: PENDING, RUNNING, COMPLETE, ERROR, CANCELLED,
        or DEAD (a task-queue item that failed every attempt)."""
        return self._task.get("state", "")

    def get(self, timeout: Optional[float] = None) -> Any:
        """Waits for the call's end and returns its result, or raises its
        RemoteError. After timeout seconds (None: no limit) raises the
        built-in TimeoutError; the call goes on."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._task.get("state") not in ENDED:
            wait = backends.POLL_SECONDS
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            self._task = self._backend.await_task(self.object_id, wait)
            if self._task.get("state") in ENDED:
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("call %s has not ended after %s s (state %s)"
                                   % (self.object_id, timeout, self._task.get("state")))
        return payload.outcome(self._task, self._backend.get_blob)

    def info(self) -> Dict[str, Any]:
        """The call as the server sees it now: state, attempt, maxAttempts,
        containerID, waitReason (why a PENDING call waits: no capacity,
        container starting, image pulling) and phases: when its last
        attempt was queued, its container scheduled, the image ready, the
        code fetched, the process started, the module imported, the call
        started and finished (RFC 3339; None for a phase not passed: a warm
        container skips the start phases). Not available inside a
        container."""
        if not isinstance(self._backend, backends.GraphQLBackend):
            raise errors.Error("a call's phases are read through GraphQL, outside containers")
        return self._backend.task_info(self.object_id)

    def cancel(self) -> None:
        """Cancels the call (a running attempt is stopped with its
        container); get() then raises CallCancelledError."""
        self._task = self._backend.cancel(self.object_id)


class FunctionMap:
    """The results of a map, as an iterator; ``object_id`` names the map,
    so ``FunctionMap.from_id(id)`` reads its results again, from any
    item, after the client that started it is gone."""

    def __init__(self, be: backends.Backend, map_id: Optional[str], start: int = 0, order_outputs: bool = True,
                 return_exceptions: bool = False, total: Optional[int] = None):
        self._backend = be
        self.object_id = map_id
        self.order_outputs = order_outputs
        self.return_exceptions = return_exceptions
        self.total = total
        self._start = start
        self._received: Optional[bytearray] = None  # 1 per item received (or skipped: before start)
        self._count = 0
        self._low = start       # the lowest item not received
        self._scan = start      # where the next mapResults starts
        self._ready: Dict[int, Dict[str, Any]] = {}
        self._next = start      # the next item to yield in order
        self._queue: List[Dict[str, Any]] = []  # unordered: received, not yet yielded
        self._gen: Optional[Iterator[Any]] = None

    def __repr__(self) -> str:
        return "FunctionMap(%r)" % self.object_id

    @classmethod
    def from_id(cls, map_id: str, start: int = 0, order_outputs: bool = True, return_exceptions: bool = False,
                client=None) -> "FunctionMap":
        """The map with this ID, yielding from item start on."""
        return cls(_backend_for(client), map_id, start=start, order_outputs=order_outputs,
                   return_exceptions=return_exceptions)

    def cancel(self) -> None:
        """Cancels the map's calls that have not ended."""
        if self.object_id:
            self._backend.cancel_map(self.object_id)

    def __iter__(self) -> "FunctionMap":
        return self

    def __next__(self) -> Any:
        if self._gen is None:
            self._gen = self._results()
        return next(self._gen)

    def _value(self, task: Dict[str, Any]) -> Any:
        try:
            return payload.outcome(task, self._backend.get_blob)
        except errors.RemoteError as e:
            if self.return_exceptions:
                return e
            raise

    def _results(self) -> Iterator[Any]:
        if self.object_id is None:
            return
        while True:
            if self.order_outputs:
                while self._next in self._ready:
                    yield self._value(self._ready.pop(self._next))
                    self._next += 1
                if self.total is not None and self._next >= self.total:
                    return
            else:
                while self._queue:
                    yield self._value(self._queue.pop(0))
                if self.total is not None and self._count >= self.total:
                    return
            for t in self._fetch():
                if self.order_outputs:
                    self._ready[t["mapIndex"]] = t
                else:
                    self._queue.append(t)

    def _setup(self, total: int) -> None:
        self.total = total
        self._received = bytearray(total)
        for i in range(min(self._start, total)):
            self._received[i] = 1
        self._count = min(self._start, total)

    def _advance(self, i: int) -> int:
        assert self._received is not None
        while i < self.total and self._received[i]:  # type: ignore[operator]
            i += 1
        return i

    def _fetch(self) -> List[Dict[str, Any]]:
        """Results not seen before, at least one (it waits for them).

        mapResults gives the ended items from an index on, so a slow item
        is stepped over: the scan moves past what it got and sweeps again
        from the lowest missing item, without waiting while items behind
        it are missing, sleeping a little after a sweep found nothing."""
        idle = 0
        while True:
            behind = self._received is not None and self._low < self._scan
            wait = 0.0 if behind else backends.POLL_SECONDS
            m, tasks = self._backend.map_results(self.object_id, self._scan, MAP_PAGE, wait)
            if self._received is None:
                self._setup(int(m["total"]))
                self._low = self._advance(self._low)
            new = []
            for t in tasks:
                i = int(t["mapIndex"])
                if 0 <= i < self.total and not self._received[i]:
                    self._received[i] = 1
                    self._count += 1
                    new.append(t)
            low = self._low
            self._low = self._advance(self._low)
            if tasks:
                self._scan = self._advance(int(tasks[-1]["mapIndex"]) + 1)
            # In order, the lowest missing item holds the rest back: go
            # back to it whenever it moved (containers end stripes of items).
            if not tasks or self._scan >= self.total or (self.order_outputs and self._low > low):
                self._scan = self._low
            if new or self._count >= self.total:
                return new
            if wait == 0 or tasks:
                backends.backoff_sleep(idle)
                idle += 1


def parse_entrypoint_args(f: Callable[..., Any], argv: List[str]) -> Tuple[List[Any], Dict[str, Any]]:
    """Command-line arguments for a local entrypoint: ``--name value`` or
    ``--name=value`` are keyword arguments, others positional; values are
    converted to the parameter's annotation when it is int, float or bool."""
    sig = inspect.signature(f)
    args: List[Any] = []
    kwargs: Dict[str, Any] = {}
    positional = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and len(a) > 2:
            key, eq, value = a[2:].partition("=")
            key = key.replace("-", "_")
            if not eq:
                p = sig.parameters.get(key)
                if p is not None and p.annotation is bool:
                    value = "true"
                elif i + 1 < len(argv):
                    i += 1
                    value = argv[i]
                else:
                    raise errors.BadInput("--%s needs a value" % key, code="BAD_USER_INPUT", field=key)
            kwargs[key] = _convert(sig.parameters.get(key), value)
        else:
            p = positional[len(args)] if len(args) < len(positional) else None
            args.append(_convert(p, a))
        i += 1
    return args, kwargs


def _convert(p: Optional[inspect.Parameter], value: str) -> Any:
    ann = p.annotation if p is not None else None
    try:
        if ann is int:
            return int(value)
        if ann is float:
            return float(value)
        if ann is bool:
            return value.lower() in ("1", "true", "yes", "on")
    except ValueError:
        raise errors.BadInput("%s: %r is not a %s" % (p.name, value, ann.__name__), code="BAD_USER_INPUT",
                              field=p.name) from None
    return value

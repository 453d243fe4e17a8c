"""``python -m levers9 serve path/to/app.py[::APP] [--name NAME]``

Deploys the script's app as an ephemeral app (kept alive by heartbeats
like ``run``'s), prints each deployment's temporary URL
(``/endpoint/NAME/APP_ID``), then watches the project folder's .py files
(their mtimes, every 0.5 s). On a saved change it imports the script
afresh in a new Python process (so no module of the old code lingers),
packs and deploys a new ephemeral app, stops the old one and prints the
new URLs. A change that does not import or deploy leaves the old app
serving. Ctrl-C stops the app and exits 130.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import backend as backends
from . import errors, packaging
from .deploy import crons_of, describe, find_app, parse_args
from .functions import _Deployment, with_defaults

USAGE = """usage: python -m levers9 serve path/to/app.py[::APP] [--name NAME]

Serves the script's app at temporary URLs and redeploys it whenever a .py
file of its folder is saved; Ctrl-C stops it."""

POLL_SECONDS = 0.5
# Where this package is imported from, so the fresh process finds it too.
_SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _say(text: str) -> None:
    print("levers9: " + text, file=sys.stderr, flush=True)


class Watcher:
    """The .py files of a project folder (those packing would pack) and
    their modification times and sizes; changed() tells which differ
    since the last look."""

    def __init__(self, root: str):
        self.root = root
        self.seen = self.snapshot()

    def snapshot(self) -> Dict[str, Tuple[int, int]]:
        out = {}
        for arc, path in packaging.files(self.root):
            if not arc.endswith(".py"):
                continue
            try:
                st = os.stat(path)
            except OSError:  # removed while listing
                continue
            out[arc] = (st.st_mtime_ns, st.st_size)
        return out

    def changed(self) -> List[str]:
        """The files added, removed or modified since the last call."""
        now = self.snapshot()
        diff = sorted(k for k in set(now) | set(self.seen) if now.get(k) != self.seen.get(k))
        self.seen = now
        return diff


def load_spec(script: str, which: Optional[str], name: Optional[str], timeout: float = 300) -> Dict[str, Any]:
    """The app of the script as a fresh Python process imports it: its
    name, project folder and FunctionInputs (without client defaults).
    What the script prints, and its traceback, go to this terminal."""
    fd, out = tempfile.mkstemp(prefix="levers9-spec-", suffix=".json")
    os.close(fd)
    try:
        cmd = [sys.executable, "-m", "levers9", "_spec", script + ("::" + which if which else ""), out]
        if name:
            cmd += ["--name", name]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_SDK] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        try:
            code = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            raise errors.BadInput("importing %s took more than %d s" % (script, timeout), code="BAD_USER_INPUT",
                                  field="script") from None
        if code != 0:
            raise errors.BadInput("importing %s failed (see above)" % script, code="BAD_USER_INPUT", field="script")
        with open(out) as f:
            return json.load(f)
    finally:
        os.unlink(out)


def spec_main(argv: List[str]) -> int:
    """The fresh process of load_spec: ``_spec SCRIPT[::APP] OUT [--name NAME]``."""
    from .__main__ import load_script
    try:
        if len(argv) < 2:
            raise errors.BadInput("usage: _spec SCRIPT[::APP] OUT [--name NAME]", code="BAD_USER_INPUT", field="args")
        out_path = argv[1]
        args = parse_args([argv[0]] + argv[2:], "serve")
        module, project = load_script(args["script"])
        app = find_app(module, args["app"])
        if not app.functions:
            raise errors.BadInput("app %s has no functions: decorate them with @app.function(), @app.endpoint(), ..."
                                  % app.name, code="BAD_USER_INPUT", field="functions")
        functions = []
        for fn in app.functions.values():
            module_name = fn.raw_f.__module__
            if module_name == "__main__":
                raise errors.BadInput("function %s is in __main__" % fn.name, code="BAD_USER_INPUT", field="module")
            functions.append(fn._wire(module_name))
    except errors.Error as e:
        _say(str(e))
        return 2
    with open(out_path, "w") as f:
        json.dump({"app": args["name"] or app.name, "project": project, "functions": functions}, f)
    return 0


class Server:
    """The serve loop: start() deploys, step() redeploys after a change,
    close() stops the app."""

    def __init__(self, script: str, which: Optional[str] = None, name: Optional[str] = None, client=None,
                 out: Callable[[str], None] = print, log: Callable[[str], None] = _say,
                 interval: float = POLL_SECONDS):
        self.script = script
        self.which = which
        self.name = name
        self.client = client
        self.out = out
        self.log = log
        self.interval = interval
        self.current: Optional[_Deployment] = None
        self.watcher: Optional[Watcher] = None

    # The three steps, overridden by the unit tests.

    def load(self) -> Dict[str, Any]:
        return load_spec(self.script, self.which, self.name)

    def deploy(self, spec: Dict[str, Any]) -> Tuple[_Deployment, Dict[str, Any]]:
        """Packs, uploads and deploys spec as an ephemeral app."""
        if self.client is None:
            from .client import Client
            self.client = Client()
        be = backends.GraphQLBackend(self.client)
        digest = packaging.upload(be, spec["project"])
        inputs = [with_defaults(f, self.client) for f in spec["functions"]]
        app = be.deploy(spec["app"], digest, inputs, fields=backends.DEPLOYED_FIELDS)
        dep = _Deployment(be, app["id"], {f["name"]: f["id"] for f in app.get("functions") or []})
        return dep, app

    def stop(self, dep: _Deployment) -> None:
        dep.close()
        dep.backend.stop_app(dep.app_id)

    def _show(self, spec: Dict[str, Any], app: Dict[str, Any]) -> None:
        for line in describe(app.get("functions") or [], crons_of(spec["functions"])):
            self.out(line)

    def start(self) -> int:
        """The first deploy: 0, or run's exit code (2: the script, 1: the deploy)."""
        # The files as they were before the import: a save while it and
        # the deploy run is a change to deploy next.
        self.watcher = Watcher(os.path.dirname(os.path.abspath(self.script)))
        try:
            spec = self.load()
        except errors.Error as e:
            self.log(str(e))
            return 2
        if os.path.realpath(spec["project"]) != os.path.realpath(self.watcher.root):
            self.watcher = Watcher(spec["project"])
        try:
            self.current, app = self.deploy(spec)
        except errors.Error as e:
            self.log("deploying app %s: %s" % (spec["app"], e))
            return 1
        self.log("serving app %s as %s; watching %s for saved .py files (Ctrl-C stops)"
                 % (spec["app"], app["id"], spec["project"]))
        self._show(spec, app)
        return 0

    def step(self) -> bool:
        """Redeploys when a .py file changed since the last look; True when
        a new app now serves."""
        assert self.watcher is not None
        changed = self.watcher.changed()
        if not changed:
            return False
        began = time.monotonic()
        self.log("changed: %s" % ", ".join(changed[:5]) + (" …" if len(changed) > 5 else ""))
        try:
            spec = self.load()
            dep, app = self.deploy(spec)
        except Exception as e:  # noqa: B902: whatever failed, the old app serves on
            self.log("%s: the previous version keeps serving" % e)
            return False
        old, self.current = self.current, dep
        if old is not None:
            try:
                self.stop(old)
            except errors.Error as e:
                self.log("stopping the previous app %s: %s" % (old.app_id, e))
        self.log("redeployed in %d ms as %s" % ((time.monotonic() - began) * 1000, app["id"]))
        self._show(spec, app)
        return True

    def close(self) -> None:
        dep, self.current = self.current, None
        if dep is not None:
            self.stop(dep)

    def run(self) -> int:
        code = self.start()
        if code:
            return code
        try:
            while True:
                time.sleep(self.interval)
                self.step()
        except KeyboardInterrupt:
            self.log("interrupted: stopping the app")
            code = 130
        try:
            self.close()
        except KeyboardInterrupt:
            pass
        except errors.Error as e:
            self.log("stopping the app: %s" % e)
        return code


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: List[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    try:
        args = parse_args(argv, "serve")
    except errors.Error as e:
        _say(str(e))
        return 2
    server = Server(args["script"], args["app"], args["name"], out=lambda s: print(s, flush=True))
    # Ctrl-C stops the app even when serve started with SIGINT ignored
    # (a background job of a shell), and so does SIGTERM.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return server.run()
    except KeyboardInterrupt:  # during the first deploy
        try:
            server.close()
        except (errors.Error, KeyboardInterrupt):
            pass
        return 130

"""``python -m levers9 run path/to/app.py[::entrypoint] [args...]``
(``deploy`` and ``serve``: levers9/deploy.py, levers9/serve.py)

Imports the script as a module named after its file (``app`` for
app.py, its folder first on sys.path: the project folder), packs and
uploads that folder, deploys the script's app as an ephemeral app, runs
its local entrypoint here and stops the app when the entrypoint ends.
Ctrl-C stops the app (cancelling its calls) and exits 130.
"""

import importlib
import os
import sys
import traceback
from typing import List, Optional

from . import errors
from .functions import App, parse_entrypoint_args

USAGE = """usage: python -m levers9 run path/to/app.py[::entrypoint] [args...]
       python -m levers9 deploy path/to/app.py[::APP] [--name NAME]
       python -m levers9 serve path/to/app.py[::APP] [--name NAME]

run: deploys the script's app for as long as its local entrypoint runs.
Arguments after the script go to the entrypoint: --name value (or
--name=value) as keyword arguments, others positionally.
deploy: deploys a new version of the app and prints its URLs.
serve: serves the app at temporary URLs, redeployed on every saved .py
file; Ctrl-C stops it."""


def _say(text: str) -> None:
    print("levers9: " + text, file=sys.stderr, flush=True)


def load_script(path: str):
    """Imports the script at path as a module named after it (relative to
    its folder, the project folder); returns (module, project folder)."""
    path = os.path.abspath(path)
    if not os.path.isfile(path) or not path.endswith(".py"):
        raise errors.BadInput("%s is not a Python file" % path, code="BAD_USER_INPUT", field="script")
    project = os.path.dirname(path)
    name = os.path.splitext(os.path.basename(path))[0]
    if not name.isidentifier():
        raise errors.BadInput("%s: a script's file name must be a module name (letters, digits, _)" % path,
                              code="BAD_USER_INPUT", field="script")
    if project not in sys.path:
        sys.path.insert(0, project)
    sys.modules.pop(name, None)
    return importlib.import_module(name), project


def find_app(module, entrypoint: Optional[str]):
    """The script's app: the one with that entrypoint, else the only one."""
    apps = []
    for value in vars(module).values():
        if isinstance(value, App) and value not in apps:
            apps.append(value)
    if entrypoint:
        apps = [a for a in apps if entrypoint in a.entrypoints] or apps
    if not apps:
        raise errors.BadInput("%s defines no levers9.App" % module.__file__, code="BAD_USER_INPUT", field="app")
    if len(apps) > 1:
        raise errors.BadInput("%s defines %d apps (%s): name the entrypoint, as app.py::main"
                              % (module.__file__, len(apps), ", ".join(a.name for a in apps)),
                              code="BAD_USER_INPUT", field="app")
    app = apps[0]
    if entrypoint:
        if entrypoint not in app.entrypoints:
            raise errors.BadInput("app %s has no local entrypoint %r (it has: %s)"
                                  % (app.name, entrypoint, ", ".join(sorted(app.entrypoints)) or "none"),
                                  code="BAD_USER_INPUT", field="entrypoint")
        return app, app.entrypoints[entrypoint]
    if not app.entrypoints:
        raise errors.BadInput("app %s has no local entrypoint: decorate one function with @app.local_entrypoint()"
                              % app.name, code="BAD_USER_INPUT", field="entrypoint")
    if len(app.entrypoints) > 1:
        raise errors.BadInput("app %s has several local entrypoints (%s): pick one, as app.py::main"
                              % (app.name, ", ".join(sorted(app.entrypoints))), code="BAD_USER_INPUT",
                              field="entrypoint")
    return app, next(iter(app.entrypoints.values()))


def run(argv: List[str]) -> int:
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    target, args = argv[0], argv[1:]
    script, _, entry = target.partition("::")
    try:
        module, project = load_script(script)
        app, f = find_app(module, entry or None)
        call_args, call_kwargs = parse_entrypoint_args(f, args)
    except errors.Error as e:
        _say(str(e))
        return 2
    try:
        app_id = app.deploy_ephemeral(project, log=_say)
        _say("app %s deployed as %s" % (app.name, app_id))
    except KeyboardInterrupt:
        app.stop()
        return 130
    except errors.Error as e:
        _say("deploying app %s: %s" % (app.name, e))
        return 1
    code = 0
    sys.argv = [script] + args
    try:
        f(*call_args, **call_kwargs)
    except KeyboardInterrupt:
        _say("interrupted: stopping app %s (its calls are cancelled)" % app.name)
        code = 130
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: B902: the entrypoint's own failure, shown as Python shows it
        traceback.print_exc()
        code = 1
    finally:
        try:
            app.stop()
        except KeyboardInterrupt:
            code = 130
        except errors.Error as e:
            _say("stopping app %s: %s" % (app.name, e))
            code = code or 1
    return code


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "deploy":
        from . import deploy
        return deploy.main(argv[1:])
    if argv[0] == "serve":
        from . import serve
        return serve.main(argv[1:])
    if argv[0] == "_spec":  # serve's fresh import of the script
        from . import serve
        return serve.spec_main(argv[1:])
    if argv[0] != "run":
        print("levers9: unknown command %r\n\n%s" % (argv[0], USAGE), file=sys.stderr)
        return 2
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())

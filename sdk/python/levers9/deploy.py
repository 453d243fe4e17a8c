"""``python -m levers9 deploy path/to/app.py[::APP] [--name NAME]``

Imports the script as ``run`` does (a module named after its file, its
folder first on sys.path: the project folder), packs and uploads that
folder, and deploys the script's app as a new version of the deployed app
of its name (``--name`` overrides it): the version's endpoints, task
queues and schedules serve until stopped (``levers9 app stop``), the
older versions' too. Prints ``app NAME version N`` and each deployment's
kind and URLs.
"""

import sys
from typing import Any, Dict, List, Optional

from . import errors
from .functions import App

USAGE = """usage: python -m levers9 deploy path/to/app.py[::APP] [--name NAME]

Deploys a new version of the script's app (APP: which app, by variable or
name, when the script defines several; --name: deploy it under another
name) and prints the URLs of its deployments."""


def _say(text: str) -> None:
    print("levers9: " + text, file=sys.stderr, flush=True)


def find_app(module: Any, which: Optional[str] = None) -> App:
    """The module's app: the one named which (its variable or its name),
    else the only one."""
    apps: Dict[str, App] = {}
    for var, value in vars(module).items():
        if isinstance(value, App) and value not in apps.values():
            apps[var] = value
    if which:
        for var, app in apps.items():
            if which in (var, app.name):
                return app
        raise errors.BadInput("%s defines no app %r (it has: %s)" % (module.__file__, which,
                                                                    ", ".join(a.name for a in apps.values()) or "none"),
                              code="BAD_USER_INPUT", field="app")
    if not apps:
        raise errors.BadInput("%s defines no levers9.App" % module.__file__, code="BAD_USER_INPUT", field="app")
    if len(apps) > 1:
        raise errors.BadInput("%s defines %d apps (%s): name one, as app.py::NAME"
                              % (module.__file__, len(apps), ", ".join(a.name for a in apps.values())),
                              code="BAD_USER_INPUT", field="app")
    return next(iter(apps.values()))


def parse_args(argv: List[str], command: str) -> Dict[str, Optional[str]]:
    """SCRIPT[::APP] [--name NAME] of deploy and serve."""
    out: Dict[str, Optional[str]] = {"script": None, "app": None, "name": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--name" or a.startswith("--name="):
            if "=" in a:
                out["name"] = a.partition("=")[2]
            elif i + 1 < len(argv):
                i += 1
                out["name"] = argv[i]
            else:
                raise errors.BadInput("--name needs a value", code="BAD_USER_INPUT", field="name")
            if not out["name"]:
                raise errors.BadInput("--name needs a value", code="BAD_USER_INPUT", field="name")
        elif a.startswith("-") or out["script"] is not None:
            raise errors.BadInput("%s: unexpected argument %r" % (command, a), code="BAD_USER_INPUT", field="args")
        else:
            script, _, which = a.partition("::")
            out["script"], out["app"] = script, which or None
        i += 1
    if not out["script"]:
        raise errors.BadInput("%s needs a script: path/to/app.py" % command, code="BAD_USER_INPUT", field="script")
    return out


def describe(functions: List[Dict[str, Any]], crons: Optional[Dict[str, str]] = None) -> List[str]:
    """One line per deployment: its kind, name and URLs (a schedule's cron)."""
    lines = []
    for f in sorted(functions, key=lambda f: (f.get("kind") or "", f["name"])):
        kind = f.get("kind") or "FUNCTION"
        where = "  ".join(f.get("urls") or [])
        if kind == "CRON":
            where = "cron %s (UTC)" % (crons or {}).get(f["name"], "?")
        elif not where:
            where = "(no URL)"
        lines.append("  %-10s %-20s %s" % (kind, f.get("deployment") or f["name"], where))
    return lines


def crons_of(functions: List[Dict[str, Any]]) -> Dict[str, str]:
    """The cron of each schedule among FunctionInputs, by name."""
    return {f["name"]: f["cron"] for f in functions if f.get("cron")}


def main(argv: List[str]) -> int:
    from .__main__ import load_script
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    try:
        args = parse_args(argv, "deploy")
        module, project = load_script(args["script"])
        app = find_app(module, args["app"])
        if args["name"]:
            app.name = args["name"]
    except errors.Error as e:
        _say(str(e))
        return 2
    try:
        deployed = app.deploy(project, log=_say)
    except KeyboardInterrupt:
        return 130
    except errors.Error as e:
        _say("deploying app %s: %s" % (app.name, e))
        return 1
    crons = {fn.name: fn.spec.get("cron") for fn in app.functions.values() if fn.spec.get("cron")}
    print("app %s version %d" % (deployed.name or app.name, deployed.version), flush=True)
    for line in describe(deployed.functions, crons):
        print(line, flush=True)
    return 0

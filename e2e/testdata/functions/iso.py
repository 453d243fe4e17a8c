"""Isolation between tenants and apps (e2e/functions_test.go).

victim: makes a call whose arguments and result are blobs (over 1 MiB),
and a map, and prints their IDs and hashes as one JSON line.
peek TASK MAP: a function of this app (another app than the victim's)
tries to read that task and map through the runner API, and prints what
it got.
"""

import hashlib
import json
import os

import levers9
from levers9 import packaging, payload

app = levers9.App("e2e-iso")
SMALL = dict(cpu=0.1, memory=256, image=os.environ.get("E2E_IMAGE") or None)


@app.function(**SMALL)
def echo(x):
    return x


def _attempt(what, f):
    try:
        f()
        return "%s readable" % what
    except levers9.Error as e:
        return "%s %s" % (what, e.code or type(e).__name__)


@app.function(**SMALL)
def peek(task_id, map_id):
    return [
        _attempt("task", lambda: levers9.FunctionCall.from_id(task_id).get(timeout=5)),
        _attempt("map", lambda: list(levers9.FunctionMap.from_id(map_id))),
        _attempt("cancel", lambda: levers9.FunctionCall.from_id(task_id).cancel()),
    ]


@app.local_entrypoint()
def main(mode: str, task: str = "", map: str = ""):
    if mode == "victim":
        big = b"v" * (1536 << 10)
        call = echo.spawn(big)
        ok = call.get(timeout=300) == big
        m = echo.map([1, 2, 3])
        ok = ok and list(m) == [1, 2, 3]
        print(json.dumps({
            "ok": ok,
            "task": call.object_id,
            "map": m.object_id,
            "code": packaging.pack(os.path.dirname(os.path.abspath(__file__)))[1],
            "args": hashlib.sha256(payload.dumps(((big,), {}))).hexdigest(),
            "result": (call._task.get("result") or {}).get("blob"),
        }), flush=True)
    elif mode == "peek":
        print("peek:", " / ".join(peek.remote(task, map)), flush=True)

"""The end-to-end tests' app (e2e/functions_test.go): each check of main
prints one line "name: value" that the Go test matches.

The container imports this module too, so its top level only declares.
E2E_IMAGE names the image on Docker (the process runtime ignores it).
"""

import os
import sys
import time

import levers9

app = levers9.App("e2e")
IMAGE = os.environ.get("E2E_IMAGE") or None
# Small shares: the built-in node has the test machine's few CPUs and
# every function runs containers of its own. E2E_CPU raises it where a
# quota is enforced (Docker: Python starts slowly under 0.1 CPU).
SMALL = dict(image=IMAGE, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.function(max_containers=4, **SMALL)
def square(x):
    return x * x


@app.function(**SMALL)
def fail(message):
    raise ValueError(message)  # E2E-REMOTE-LINE


# One container, so the retry runs in the process that saw the first try.
_seen = set()


@app.function(retries=1, max_containers=1, **SMALL)
def flaky(key):
    if key not in _seen:
        _seen.add(key)
        raise RuntimeError("first attempt of %s fails" % key)
    return "second attempt of %s" % key


@app.function(timeout=1, **SMALL)
def sleepy(seconds):
    time.sleep(seconds)
    return seconds


@app.function(**SMALL)
def hold(seconds):
    time.sleep(seconds)
    return seconds


@app.function(**SMALL)
def first(x):
    # Called only by the "warm" check: its first call starts a container.
    return x


@app.function(**SMALL)
def pipeline(x):
    # A function calling another of its app (through the runner API).
    return square.remote(x) + 1


def say(name, value):
    print("%s: %s" % (name, value), flush=True)


def wait_running(call, bound=120):
    deadline = time.monotonic() + bound
    while call.state != "RUNNING" and time.monotonic() < deadline:
        try:
            call.get(timeout=0.5)
        except TimeoutError:
            pass
    return call.state


@app.local_entrypoint()
def main(only: str = ""):
    checks = only.split(",") if only else ["remote", "map", "spawn", "error", "retry", "timeout", "cancel",
                                           "pipeline"]
    if "remote" in checks:
        say("remote", square.remote(7))
    if "map" in checks:
        n = int(os.environ.get("E2E_MAP_ITEMS") or 1000)
        got = list(square.map(range(n)))
        say("map", "in order %d" % n if got == [i * i for i in range(n)] else "WRONG %r" % got[:20])
    if "spawn" in checks:
        call = square.spawn(4)
        say("spawn", "%s %s" % (call.object_id.split("_")[0], call.get(timeout=300)))
    if "error" in checks:
        try:
            fail.remote("bad input")
            say("error", "none raised")
        except levers9.RemoteError as e:
            say("error", "%s %s %s" % (type(e.exception).__name__, e.kind, e.message.replace("\n", " ")))
            for line in e.traceback.splitlines():
                say("traceback", line.strip())
    if "retry" in checks:
        try:
            say("retry", flaky.remote("k1"))
        except levers9.RemoteError as e:
            say("retry", "failed: %s" % e.message)
    if "timeout" in checks:
        try:
            say("timeout", "returned %s" % sleepy.remote(30))
        except levers9.FunctionTimeoutError as e:
            say("timeout", "%s %s" % (type(e).__name__, e.kind))
        except levers9.RemoteError as e:
            say("timeout", "other %s %s" % (type(e).__name__, e.kind))
    if "cancel" in checks:
        call = hold.spawn(300)
        state = wait_running(call)
        call.cancel()
        try:
            say("cancel", "returned %s" % call.get(timeout=120))
        except levers9.CallCancelledError as e:
            say("cancel", "%s after %s" % (type(e).__name__, state))
        except levers9.RemoteError as e:
            say("cancel", "other %s %s" % (type(e).__name__, e.kind))
    if "pipeline" in checks:
        say("pipeline", pipeline.remote(7))
    if "warm" in checks:
        # Two calls one after the other: the first starts the function's
        # container, the second finds it up.
        for i in range(2):
            call = first.spawn(i)
            call.get(timeout=300)
            say("call%d" % i, call.object_id)

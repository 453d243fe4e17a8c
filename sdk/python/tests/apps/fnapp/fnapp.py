"""The app tests/test_functions.py deploys (on the server's default queue)."""

import json
import os
import sys
import time

import levers9

app = levers9.App("sdk-tests")


class Oops(Exception):
    """An exception of the app's own, raised in a container."""


@app.function(cpu=0.25, memory=256)
def square(x):
    return x * x


@app.function(cpu=0.25, memory=256)
def fail(message):
    raise Oops(message)


@app.function(cpu=0.25, memory=256, retries=2)
def flaky(key):
    """Fails on its first attempt: a file in /tmp (shared by the runtime's
    jobs) remembers the attempt."""
    path = "/tmp/levers9-sdk-flaky-" + key
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    except FileExistsError:
        os.unlink(path)
        return "second attempt"
    os.close(fd)
    raise RuntimeError("first attempt fails")


@app.function(cpu=0.25, memory=256, timeout=2)
def sleepy(seconds):
    time.sleep(seconds)
    return seconds


@app.function(cpu=0.25, memory=256, timeout=300)
def long_sleep(seconds):
    time.sleep(seconds)
    return seconds


@app.function(cpu=0.25, memory=256)
def size(data):
    return len(data)


@app.function(cpu=0.25, memory=256)
def blob(n):
    return b"y" * n


@app.function(cpu=0.25, memory=256)
def pipeline(n):
    """Calls the app's other functions from inside a container."""
    return {"remote": square.remote(n), "map": list(square.map(range(n))),
            "spawned": square.spawn(n + 1).get(timeout=120)}


@app.local_entrypoint()
def main(n: int = 3):
    print(json.dumps({"squares": list(square.map(range(n))), "one": square.remote(n)}))


@app.local_entrypoint()
def hang():
    call = long_sleep.spawn(600)
    print(json.dumps({"call": call.object_id}), flush=True)
    call.get()


@app.local_entrypoint()
def argv(*args):
    print(json.dumps({"argv": sys.argv[1:]}))

"""Task queues: an item failing twice then succeeding, one always
failing (a dead letter), and a no-op for idempotency keys."""

import os

import levers9

app = levers9.App("e2e-queue")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)

# One container, so every attempt runs in the process that saw the others.
_tries = {}


@app.task_queue(retries=3, max_containers=1, **SMALL)
def flaky_q(item):
    key = item["key"]
    _tries[key] = _tries.get(key, 0) + 1
    if _tries[key] < 3:
        raise RuntimeError("attempt %d of %s fails" % (_tries[key], key))
    return {"key": key, "tries": _tries[key]}


@app.task_queue(retries=1, max_containers=1, **SMALL)
def dead_q(item):
    raise RuntimeError("%r always fails" % (item,))


@app.task_queue(**SMALL)
def noop_q(item):
    return item

"""An endpoint slower than its sync limit (answers 202, then the task
URL gives the result) and one that raises (500 with the task ID)."""

import os
import time

import levers9

app = levers9.App("e2e-long")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.endpoint(method="POST", sync_timeout=1, **SMALL)
def slow(item):
    time.sleep(item["seconds"])
    return {"slept": item["seconds"]}


@app.endpoint(method="POST", **SMALL)
def boom(item):
    raise ValueError("boom %s" % item["n"])

"""A schedule firing every minute (e2e: two server replicas, one tick
runs once)."""

import os
import time

import levers9

app = levers9.App("e2e-cron")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.schedule(cron="* * * * *", **SMALL)
def tick():
    return time.time()

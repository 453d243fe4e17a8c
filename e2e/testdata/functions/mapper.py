"""A client that starts a map, prints its ID and then each result as it
arrives (e2e: killed with SIGKILL after a few, then resume.py reads the
map again by ID)."""

import os
import time

import levers9

app = levers9.App("e2e-resume")


@app.function(max_containers=2, cpu=0.1, memory=256, image=os.environ.get("E2E_IMAGE") or None)
def slow_square(x):
    time.sleep(0.05)
    return x * x


@app.local_entrypoint()
def main(n: int = 200):
    m = slow_square.map(range(n))
    print("map:", m.object_id, flush=True)
    for i, v in enumerate(m):
        print("result:", i, v, flush=True)

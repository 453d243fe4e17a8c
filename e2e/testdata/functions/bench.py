"""Benchmarks of functions (e2e/functions_bench_test.go); the last line
printed is one JSON object of numbers.

--mode warm: a warm .remote() round trip, p50/p99 over --calls calls of a
no-op on a keep_warm=1 container after a warm-up, beside a GraphQL
viewer query round trip on the same client (same connection pool); then
.map() of --items no-op items on containers warmed by a first map, beside
the same items as sequential .remote() calls (items/s from the p50).
--mode cold: the phases of a first call (a new app: its container starts
cold), in ms after the call was queued, and a second (warm) call's
queued-to-finished for comparison.
"""

import datetime
import json
import os
import time

import levers9

app = levers9.App("e2e-bench")
SMALL = dict(cpu=0.1, memory=256, image=os.environ.get("E2E_IMAGE") or None)


@app.function(keep_warm=1, **SMALL)
def noop(x):
    return x


@app.function(keep_warm=2, max_containers=4, concurrency=4, **SMALL)
def noop_map(x):
    return x


# A whole CPU: under a 0.1 CPU quota Python's own start takes seconds.
@app.function(cpu=1, memory=512, image=SMALL["image"])
def cold(x):
    return x


def pct(xs, p):
    xs = sorted(xs)
    return xs[(len(xs) - 1) * p // 100]


def ms(seconds):
    return round(seconds * 1000, 3)


def parse(ts):
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def warm(calls, items):
    for i in range(20):
        noop.remote(i)
    remote = []
    for i in range(calls):
        t0 = time.perf_counter()
        noop.remote(i)
        remote.append(time.perf_counter() - t0)
    client = app.client
    viewer = []
    for _ in range(calls):
        t0 = time.perf_counter()
        client.graphql("{ viewer { user { id } } }")
        viewer.append(time.perf_counter() - t0)
    list(noop_map.map(range(1000)))  # brings the map's containers up
    t0 = time.perf_counter()
    m = noop_map.map(range(items))
    created = time.perf_counter() - t0
    got = list(m)
    total = time.perf_counter() - t0
    assert got == list(range(items)), "map results out of order"
    return {
        "remote_p50_ms": ms(pct(remote, 50)), "remote_p99_ms": ms(pct(remote, 99)),
        "viewer_p50_ms": ms(pct(viewer, 50)), "viewer_p99_ms": ms(pct(viewer, 99)),
        "map_items": items, "map_items_per_s": round(items / total, 1), "map_create_ms": ms(created),
        "sequential_remote_items_per_s": round(1 / pct(remote, 50), 1),
    }


PHASES = ["scheduledAt", "imageReadyAt", "codeFetchedAt", "processStartedAt", "importedAt", "startedAt",
          "finishedAt"]


def since_queued(info):
    ph = info["phases"]
    q = parse(ph["queuedAt"])
    return {p: (ms((parse(ph[p]) - q).total_seconds()) if ph.get(p) else None) for p in PHASES}


def cold_start():
    first = cold.spawn(1)
    first.get(timeout=600)
    second = cold.spawn(2)
    second.get(timeout=600)
    out = {"cold_" + k: v for k, v in since_queued(first.info()).items()}
    out["warm_finishedAt"] = since_queued(second.info())["finishedAt"]
    return out


@app.local_entrypoint()
def main(mode: str = "warm", calls: int = 200, items: int = 10000):
    result = warm(calls, items) if mode == "warm" else cold_start()
    print(json.dumps(result), flush=True)

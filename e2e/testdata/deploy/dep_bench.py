"""Benchmarks of deployments (e2e/deploy_bench_test.go): a JSON echo
endpoint and a no-op task queue, on warm containers."""

import os

import levers9

app = levers9.App("e2e-deploy-bench")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=0.25, memory=256)


@app.endpoint(method="POST", keep_warm=2, max_containers=2, concurrency=8, **SMALL)
def bench_echo(item):
    return item


@app.task_queue(keep_warm=2, max_containers=2, concurrency=8, **SMALL)
def bench_q(item):
    return None

"""Cross-tenant calls and a public endpoint."""

import os

import levers9

app = levers9.App("e2e-public")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.endpoint(method="GET", public=True, **SMALL)
def pub_hello():
    return {"public": True}


@app.endpoint(method="POST", **SMALL)
def priv_hello(item):
    return {"private": item}


@app.function(**SMALL)
def priv_fn(x):
    return x


@app.task_queue(**SMALL)
def priv_q(item):
    return item

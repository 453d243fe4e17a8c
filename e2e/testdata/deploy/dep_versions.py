"""Versions of one deployed app (e2e/deploy_test.go): the test deploys
this file, rewrites the VERSION line and deploys it again, then calls both
versions, the alias, a rollback and a stopped version.

E2E_IMAGE names the image on Docker (the process runtime ignores it).
"""

import os

import levers9

app = levers9.App("e2e-versions")
VERSION = "v1"  # E2E-VERSION: the test rewrites this line
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.endpoint(method="POST", **SMALL)
def hello(item):
    return {"version": VERSION, "echo": item}


@app.function(**SMALL)
def which(x):
    return "%s:%s" % (VERSION, x)

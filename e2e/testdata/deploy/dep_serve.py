"""levers9 serve: the test rewrites the VALUE line while it serves."""

import os

import levers9

app = levers9.App("e2e-serve")
VALUE = "first"  # E2E-SERVE: the test rewrites this line
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.endpoint(method="GET", **SMALL)
def served():
    return {"value": VALUE}

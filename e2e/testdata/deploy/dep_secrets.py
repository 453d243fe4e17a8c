"""Secrets: one function names the secret hf, one does not. Each
returns the SHA-256 of HF_TOKEN as it sees it (None when unset), never
the value, so that no result or log holds it."""

import hashlib
import os

import levers9

app = levers9.App("e2e-secrets")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


def _seen():
    v = os.environ.get("HF_TOKEN")
    return None if v is None else hashlib.sha256(v.encode()).hexdigest()


@app.function(secrets=["hf"], **SMALL)
def with_secret():
    return _seen()


@app.function(**SMALL)
def without_secret():
    return _seen()

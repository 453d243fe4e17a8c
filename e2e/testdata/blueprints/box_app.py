"""A box: a long-running HTTP server on port 8000, reached through the
relay at /box/e2e_box/8000/. The function starts it and returns; the
runner keeps the container up while the port answers."""

import os
import subprocess

import levers9

app = levers9.App("e2e-box")


@app.box(ports=[8000], image=os.environ.get("E2E_IMAGE") or None, cpu=0.25, memory=256)
def e2e_box():
    os.makedirs("/tmp/www", exist_ok=True)
    with open("/tmp/www/hello.txt", "w") as f:
        f.write("hello from the box\n")
    subprocess.Popen(["python3", "-m", "http.server", "8000", "--directory", "/tmp/www"])

"""A sandbox driven as the issue's example drives one; prints "name: value"
lines that TestSandboxDocker checks.

    E2E_IMAGE=levers9-test-python:bookworm python3 sandbox.py
"""

import os
import threading
import time
import urllib.error
import urllib.request

import levers9

IMAGE = os.environ["E2E_IMAGE"]
SMALL = dict(cpu=0.25, memory=256, timeout=900)

# Prints "a", then waits (at most a minute) for /tmp/go, which the script
# writes only once it has read "a": the process can end only if its first
# line reached the client while it ran.
WAIT_FOR_GO = (
    "import os, sys, time\n"
    "print('a', flush=True)\n"
    "for _ in range(1200):\n"
    "    if os.path.exists('/tmp/go'):\n"
    "        break\n"
    "    time.sleep(0.05)\n"
    "else:\n"
    "    print('never', flush=True)\n"
    "    sys.exit(9)\n"
    "print('b', flush=True)\n"
)


def text(chunk):
    if isinstance(chunk, bytes):
        chunk = chunk.decode()
    return chunk.rstrip("\n")


def check_stream(sb):
    p = sb.exec("python3", "-c", WAIT_FOR_GO)
    lines = iter(p.stdout)
    first = text(next(lines))
    state = "while running" if p.returncode is None else "after the end"
    sb.files.write("/tmp/go", b"")  # a second exec while the first runs
    rest = [text(line) for line in lines]
    code = p.wait()
    print("stream:", first, state, flush=True)
    print("streamrest:", " ".join(r for r in rest if r), "exit", code, flush=True)


def check_split(sb):
    p = sb.exec("sh", "-c", "echo out; echo err >&2; exit 3")
    out, err = text(p.stdout.read()), text(p.stderr.read())
    print("split:", out, "/", err, "/", p.wait(), flush=True)


def check_files(sb):
    data = bytes(range(256)) * 4096  # 1 MiB, NUL bytes included
    sb.files.write("/tmp/dir/sub/blob.bin", data)
    back = sb.files.read("/tmp/dir/sub/blob.bin")
    print("files:", len(back), "bytes", "equal" if back == data else "differ", flush=True)
    try:
        sb.files.read("/no/such/file")
        print("missing: no error", flush=True)
    except FileNotFoundError:
        print("missing: FileNotFoundError", flush=True)
    except Exception as e:  # noqa: BLE001 - printed for the test to show
        print("missing:", type(e).__name__, e, flush=True)


def check_concurrent(sb, n=4):
    # All open at once, their input sent in reverse order of opening: each
    # echoes its own.
    procs = [sb.exec("sh", "-c", "cat; echo end %d" % i) for i in range(n)]
    want = []
    for i in reversed(range(n)):
        data = ("input of exec %d\n" % i) * 200
        want.insert(0, data + "end %d\n" % i)
        procs[i].stdin.write(data.encode())
        procs[i].stdin.close()
    results = [None] * n

    def read(i):
        out = procs[i].stdout.read()
        results[i] = (out.decode() if isinstance(out, bytes) else out, procs[i].wait())

    threads = [threading.Thread(target=read, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    ok = sum(1 for i in range(n) if results[i] == (want[i], 0))
    print("concurrent:", ok, "of", n, "echoed their own stdin", flush=True)
    if ok != n:
        print("concurrentgot:", [r if r is None else (len(r[0]), r[1]) for r in results], flush=True)


def check_tunnel(sb):
    sb.exec("sh", "-c", "mkdir -p /tmp/www && echo hello > /tmp/www/hello.txt && "
                        "exec python3 -m http.server 8000 --directory /tmp/www")
    url = sb.tunnels()[8000].url.rstrip("/") + "/hello.txt"
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + os.environ["LEVERS9_TOKEN"]})
    last = None
    for _ in range(600):  # the server starts in the background
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                print("tunnel:", resp.status, resp.read().decode().strip(), "through the relay", flush=True)
                return
        except (urllib.error.URLError, OSError) as e:
            last = e
            time.sleep(0.1)
    print("tunnel: failed", url, last, flush=True)


def main():
    bp = levers9.Blueprint.from_registry(IMAGE).run_commands("mkdir -p /srv")
    bp.build()
    print("blueprint:", bp.id, flush=True)
    sandboxes = []
    try:
        sb = levers9.Sandbox.create(blueprint=bp, ports=[8000], **SMALL)
        sandboxes.append(sb)
        print("sandbox:", sb.id, flush=True)
        check_stream(sb)
        check_split(sb)
        check_files(sb)
        check_concurrent(sb)
        check_tunnel(sb)

        sb.files.write("/srv/snap.txt", b"kept")
        snap = sb.snapshot()
        print("snapshotid:", snap.id, flush=True)
        sb2 = levers9.Sandbox.create(blueprint=snap, **SMALL)
        sandboxes.append(sb2)
        print("sandbox:", sb2.id, flush=True)
        print("snapread:", sb2.files.read("/srv/snap.txt").decode(), flush=True)
    finally:
        for sb in sandboxes:
            sb.terminate()


main()

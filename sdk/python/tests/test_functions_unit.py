"""Serverless functions without a server: packaging, wire forms, errors,
the map's result sweep, and the runner against a small stand-in of the
runner API on a unix socket (the real path runs in tests/test_functions.py
and the Go end-to-end tests)."""

import base64
import hashlib
import http.server
import io
import json
import os
import pickle
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zipfile
from unittest import mock

import levers9
from levers9 import backend as backends
from levers9 import functions, packaging, payload, runner

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT_APP = os.path.join(SDK, "tests", "apps", "unit")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def args_payload(*args, **kwargs):
    return {"data": b64(pickle.dumps((args, kwargs), protocol=4))}


def _identity(x):
    return x


class PackagingTest(unittest.TestCase):
    def tree(self, root):
        def write(rel, data=b"x", mode=0o644):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, mode)
        write("app.py", b"print('hi')\n")
        write("pkg/__init__.py", b"")
        write("pkg/run.sh", b"#!/bin/sh\n", 0o775)
        write("pkg/mod.pyc")
        for d in (".git", "__pycache__", ".venv", "venv", "node_modules", ".levers9-data", "levers9-data",
                  "pkg/__pycache__"):
            write(d + "/f")
        outside = tempfile.mkdtemp()
        self.addCleanup(lambda: os.path.exists(outside) and [os.unlink(os.path.join(outside, n)) for n in
                                                             os.listdir(outside)] and os.rmdir(outside))
        with open(os.path.join(outside, "secret"), "w") as f:
            f.write("no")
        os.symlink(os.path.join(outside, "secret"), os.path.join(root, "out-link"))
        os.symlink(outside, os.path.join(root, "out-dir"))
        os.symlink(os.path.join(root, "app.py"), os.path.join(root, "in-link.py"))

    def test_deterministic_and_exclusions(self):
        with tempfile.TemporaryDirectory() as root:
            self.tree(root)
            data, digest = packaging.pack(root)
            self.assertEqual(digest, hashlib.sha256(data).hexdigest())
            zf = zipfile.ZipFile(io.BytesIO(data))
            self.assertEqual(zf.namelist(), ["app.py", "in-link.py", "pkg/__init__.py", "pkg/run.sh"])
            modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
            self.assertEqual(modes, {"app.py": 0o644, "in-link.py": 0o644, "pkg/__init__.py": 0o644,
                                     "pkg/run.sh": 0o755})
            self.assertEqual({i.date_time for i in zf.infolist()}, {(1980, 1, 1, 0, 0, 0)})
            self.assertEqual(zf.read("in-link.py"), b"print('hi')\n")
            # New times and a new listing order change nothing.
            os.utime(os.path.join(root, "app.py"), (1, 1))
            os.chmod(os.path.join(root, "pkg/__init__.py"), 0o600)
            self.assertEqual(packaging.pack(root), (data, digest))
            with open(os.path.join(root, "app.py"), "ab") as f:
                f.write(b"#\n")
            self.assertNotEqual(packaging.pack(root)[1], digest)

    def test_not_a_folder(self):
        with self.assertRaises(levers9.BadInput):
            packaging.pack("/no/such/folder")


class SpecTest(unittest.TestCase):
    def test_gpu(self):
        self.assertIsNone(functions.gpu_spec(None))
        self.assertEqual(functions.gpu_spec("H100"), "H100")
        self.assertEqual(functions.gpu_spec("H100:2"), "H100:2")
        self.assertEqual(functions.gpu_spec(["H100", "A100"]), "H100,A100")
        self.assertEqual(functions.gpu_spec(("H100:2", "A100:2")), "H100:2,A100:2")
        for bad in ("", "H100:0", "H100,A100", [], ["H100", 3], "H 100", ["H100:2", "A100"]):
            with self.subTest(bad=bad), self.assertRaises(levers9.BadInput):
                functions.gpu_spec(bad)

    def test_function_input(self):
        app = levers9.App("spec")

        f = app.function(queue="gpu", gpu=["H100", "A100"], cpu=1.5, memory=2048, timeout=60, retries=2,
                         max_containers=3, min_containers=1, keep_warm=1, concurrency=4,
                         scaledown_window=30)(_identity)
        client = mock.Mock(default_queue="default", default_project="")
        self.assertEqual(f._input("mod", client), {
            "name": "_identity", "module": "mod", "qualname": f.raw_f.__qualname__, "queue": "gpu", "gpu": "H100,A100", "cpu": 1.5, "memoryMiB": 2048,
            "timeoutSeconds": 60, "retries": 2, "maxContainers": 3, "minContainers": 1, "keepWarm": 1,
            "concurrency": 4, "scaledownWindowSeconds": 30, "kind": "FUNCTION"})
        self.assertEqual(f(2), 2)  # calling it runs it here
        self.assertEqual(f.local(3), 3)

    def test_bad_specs(self):
        app = levers9.App("bad")
        for kw in ({"retries": -1}, {"memory": 1.5}, {"timeout": "10"}, {"concurrency": True}):
            with self.subTest(kw=kw), self.assertRaises(levers9.BadInput):
                app.function(**kw)

    def test_not_deployed_says_how(self):
        from tests.apps.unit import unitfns
        with mock.patch.dict(os.environ, {"LEVERS9_RUNNER_SOCKET": ""}):
            with self.assertRaises(levers9.Error) as cm:
                unitfns.add.remote(1, 2)
        self.assertIn("levers9 run app.py", str(cm.exception))
        self.assertEqual(unitfns.add.local(1, 2), 3)

    def test_functions_pickle_by_reference(self):
        from tests.apps.unit import unitfns
        self.assertIs(pickle.loads(pickle.dumps(unitfns.add)), unitfns.add)

    def test_project_of_a_module(self):
        from tests.apps.unit import unitfns
        # Imported as a package's module: the folder above the package is
        # packed, and the container imports the same dotted name.
        self.assertEqual(functions._project_of(unitfns.app), (SDK, {}))

    def test_entrypoint_args(self):
        def main(n: int, name="x", ratio: float = 1.0, dry: bool = False):
            pass
        self.assertEqual(functions.parse_entrypoint_args(main, ["3", "--name", "y", "--ratio=0.5", "--dry"]),
                         ([3], {"name": "y", "ratio": 0.5, "dry": True}))
        with self.assertRaises(levers9.BadInput):
            functions.parse_entrypoint_args(main, ["three"])


class PayloadTest(unittest.TestCase):
    def test_inline_up_to_1_mib_then_blob(self):
        blobs = {}
        put = blobs.__setitem__
        small = payload.encode(b"a" * (1 << 20), put)
        self.assertEqual(set(small), {"data"})
        self.assertEqual(blobs, {})
        large = payload.encode(b"a" * ((1 << 20) + 1), put)
        self.assertEqual(large, {"blob": hashlib.sha256(b"a" * ((1 << 20) + 1)).hexdigest()})
        self.assertEqual(payload.raw(large, blobs.__getitem__), b"a" * ((1 << 20) + 1))
        self.assertEqual(payload.raw(small, None), b"a" * (1 << 20))
        with self.assertRaises(levers9.Error):  # bytes that are not the hash's
            payload.raw({"blob": large["blob"]}, lambda h: b"other")

    def test_args_round_trip(self):
        p = payload.encode_args((1, "two"), {"three": [3]}, None)
        self.assertEqual(payload.decode_args(p, None), ((1, "two"), {"three": [3]}))
        self.assertEqual(pickle.loads(base64.b64decode(p["data"])), ((1, "two"), {"three": [3]}))
        with self.assertRaises(levers9.BadInput):
            payload.encode_args((lambda: 1,), {}, None)


class RemoteErrorTest(unittest.TestCase):
    def test_from_failure_json(self):
        task = {"id": "task_1", "state": "ERROR", "errorKind": "exception", "errorMessage": "ValueError: bad",
                "errorTraceback": "Traceback (most recent call last):\n  ...\nValueError: bad\n",
                "errorException": b64(pickle.dumps(ValueError("bad")))}
        with self.assertRaises(levers9.RemoteError) as cm:
            payload.outcome(task, None)
        e = cm.exception
        self.assertIsInstance(e, levers9.Error)
        self.assertEqual((e.task_id, e.kind, e.message), ("task_1", "exception", "ValueError: bad"))
        self.assertIn("ValueError: bad", e.traceback)
        self.assertIsInstance(e.exception, ValueError)
        self.assertIs(e.__cause__, e.exception)
        self.assertIn("Remote traceback", str(e))
        again = pickle.loads(pickle.dumps(e))
        self.assertEqual((type(again), again.task_id, again.traceback), (levers9.RemoteError, "task_1", e.traceback))

    def test_kinds(self):
        t = payload.failure_error({"id": "t", "state": "ERROR", "errorKind": "timeout", "errorMessage": "late"})
        self.assertIsInstance(t, levers9.FunctionTimeoutError)
        c = payload.failure_error({"id": "t", "state": "CANCELLED", "errorKind": "", "errorMessage": ""})
        self.assertIsInstance(c, levers9.CallCancelledError)
        self.assertIsInstance(c, levers9.RemoteError)
        junk = payload.failure_error({"id": "t", "state": "ERROR", "errorKind": "exception",
                                      "errorException": b64(b"not a pickle")})
        self.assertIsNone(junk.exception)
        self.assertEqual(payload.outcome({"state": "COMPLETE", "result": {"data": b64(pickle.dumps(7))}}, None), 7)

    def test_exception_failure(self):
        from tests.apps.unit import unitfns
        try:
            unitfns.boom("no")
        except ValueError as e:
            f = runner.exception_failure(e)
        self.assertEqual(f["message"], "ValueError: no")
        self.assertIn("raise ValueError(message)", f["traceback"])
        self.assertIsInstance(pickle.loads(base64.b64decode(f["exception"])), ValueError)
        try:
            unitfns.stubborn()
        except unitfns.Stubborn as e:
            f = runner.exception_failure(e)
        self.assertNotIn("exception", f)  # it would not unpickle anywhere
        self.assertEqual(f["message"], "Stubborn: 1/2")


class FakeMapBackend(backends.Backend):
    """mapResults over a list of task JSON, items ending in a chosen order."""

    def __init__(self, tasks, order):
        self.tasks = tasks
        self.order = list(order)   # indices, in the order they end
        self.ended = set()
        self.requests = 0

    def map_results(self, map_id, start, limit, wait):
        self.requests += 1
        if self.order:  # one more item ends between requests
            self.ended.add(self.order.pop(0))
        got = [self.tasks[i] for i in sorted(self.ended) if i >= start][:limit]
        done = len(self.ended)
        return {"id": map_id, "total": len(self.tasks), "succeeded": done, "failed": 0}, got

    def get_blob(self, digest):
        raise AssertionError("no blobs here")


class MapSweepTest(unittest.TestCase):
    def tasks(self, n, fail=()):
        out = []
        for i in range(n):
            if i in fail:
                out.append({"id": "t%d" % i, "mapIndex": i, "state": "ERROR", "errorKind": "exception",
                            "errorMessage": "ValueError: %d" % i})
            else:
                out.append({"id": "t%d" % i, "mapIndex": i, "state": "COMPLETE",
                            "result": {"data": b64(pickle.dumps(i * i))}})
        return out

    def setUp(self):
        patcher = mock.patch.object(backends, "backoff_sleep", lambda attempt: None)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_in_order_whatever_order_items_end(self):
        order = [5, 3, 9, 0, 1, 2, 8, 4, 7, 6]
        be = FakeMapBackend(self.tasks(10), order)
        m = functions.FunctionMap(be, "map_1", total=10)
        self.assertEqual(list(m), [i * i for i in range(10)])
        self.assertLess(be.requests, 60)

    def test_unordered_as_they_end(self):
        be = FakeMapBackend(self.tasks(10), [5, 3, 9, 0, 1, 2, 8, 4, 7, 6])
        got = list(functions.FunctionMap(be, "map_1", order_outputs=False))
        self.assertEqual(sorted(got), [i * i for i in range(10)])
        self.assertEqual(got[:2], [25, 9])

    def test_resume_from_an_item(self):
        be = FakeMapBackend(self.tasks(10), range(10))
        self.assertEqual(list(functions.FunctionMap(be, "map_1", start=7)), [49, 64, 81])

    def test_failures(self):
        be = FakeMapBackend(self.tasks(4, fail={2}), range(4))
        got = list(functions.FunctionMap(be, "map_1", return_exceptions=True))
        self.assertEqual(got[:2] + got[3:], [0, 1, 9])
        self.assertIsInstance(got[2], levers9.RemoteError)
        it = functions.FunctionMap(FakeMapBackend(self.tasks(4, fail={2}), range(4)), "map_1")
        self.assertEqual([next(it), next(it)], [0, 1])
        with self.assertRaises(levers9.RemoteError):
            next(it)

    def test_empty(self):
        self.assertEqual(list(functions.FunctionMap(None, None, total=0)), [])


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a runner that exits drops its kept-alive connections


class FakeRunnerAPI:
    """The runner API's contract, in memory: hands out queued tasks,
    records outcomes, stores blobs; answers exit once every task is done."""

    def __init__(self, function, tasks, exit_when_done=True):
        self.function = function
        self.queue = list(tasks)
        self.expected = len(tasks)
        self.done = {}
        self.claims = []
        self.blobs = {}
        self.calls = []
        self.exit_when_done = exit_when_done
        self.cond = threading.Condition()
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "runner.sock")
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status, body, ctype="application/json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def body(self):
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_GET(self):
                if self.path == "/runner/v1/function":
                    return self.reply(200, fake.function)
                digest = self.path.rsplit("/", 1)[-1]
                if digest in fake.blobs:
                    return self.reply(200, fake.blobs[digest], "application/octet-stream")
                self.reply(404, {"error": {"code": "NOT_FOUND", "message": "no blob"}})

            def do_PUT(self):
                data = self.body()
                fake.blobs[hashlib.sha256(data).hexdigest()] = data
                self.reply(201, b"")

            def do_POST(self):
                doc = json.loads(self.body() or b"{}")
                if self.path == "/runner/v1/claim":
                    return self.reply(200, fake.claim(doc))
                fake.calls.append((self.path, doc))
                if self.path == "/runner/v1/call":
                    return self.reply(200, {"id": "task_inner", "state": "PENDING"})
                if self.path == "/runner/v1/await":
                    return self.reply(200, {"id": doc["task"], "state": "COMPLETE",
                                            "result": {"data": b64(pickle.dumps("inner ok"))}})
                self.reply(404, {"error": {"code": "NOT_FOUND", "message": self.path}})

        self.server = _UnixHTTPServer(self.path, Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def claim(self, doc):
        with self.cond:
            self.claims.append(doc)
            for o in doc.get("done") or []:
                self.done[o["task"]] = o
            self.cond.notify_all()
            deadline = time.monotonic() + min(doc.get("waitMs", 0), 2000) / 1000
            while not self.queue and len(self.done) < self.expected and time.monotonic() < deadline:
                self.cond.wait(deadline - time.monotonic())
            n = doc.get("max", 0)
            tasks, self.queue = self.queue[:n], self.queue[n:]
            return {"tasks": tasks, "exit": self.exit_when_done and len(self.done) >= self.expected}

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.path)
        os.rmdir(self.dir)

    def run_runner(self, timeout=30):
        env = dict(os.environ, LEVERS9_RUNNER_SOCKET=self.path, PYTHONPATH=os.pathsep.join([SDK, UNIT_APP]),
                   PYTHONDONTWRITEBYTECODE="1")
        return subprocess.run([sys.executable, "-m", "levers9.runner"], env=env, capture_output=True, text=True,
                              timeout=timeout)


def function_info(qualname, module="unitfns", concurrency=1):
    return {"id": "fn_1", "name": qualname, "app": "app_1", "module": module, "qualname": qualname,
            "concurrency": concurrency, "timeoutSeconds": 30}


def task(tid, args, timeout=30, attempt=1):
    return {"id": tid, "attempt": attempt, "timeoutSeconds": timeout, "args": args}


class RunnerTest(unittest.TestCase):
    def fake(self, *args, **kwargs):
        f = FakeRunnerAPI(*args, **kwargs)
        self.addCleanup(f.close)
        return f

    def test_calls_results_and_blobs(self):
        big_args = pickle.dumps(((1 << 20, ), {}), protocol=4) + b""  # small: sent as a blob anyway
        digest = hashlib.sha256(big_args).hexdigest()
        f = self.fake(function_info("add", concurrency=2),
                      [task("task_%d" % i, args_payload(i, b=i)) for i in range(20)]
                      + [task("task_str", args_payload("a", b="b")), task("task_bad", args_payload("a", b=1))])
        proc = f.run_runner()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for i in range(20):
            o = f.done["task_%d" % i]
            self.assertEqual(pickle.loads(base64.b64decode(o["result"]["data"])), 2 * i)
            self.assertEqual(o["attempt"], 1)
            self.assertLessEqual(o["startedAt"], o["finishedAt"])
        self.assertEqual(pickle.loads(base64.b64decode(f.done["task_str"]["result"]["data"])), "ab")
        bad = f.done["task_bad"]["failure"]
        self.assertEqual(bad["kind"], "exception")
        self.assertIn("TypeError", bad["message"])
        self.assertIn("return a + b", bad["traceback"])
        self.assertIsInstance(pickle.loads(base64.b64decode(bad["exception"])), TypeError)
        # The start phases go with the first claim only.
        self.assertEqual(set(f.claims[0]["phases"]), {"processStartedAt", "importedAt"})
        self.assertTrue(all("phases" not in c for c in f.claims[1:]))
        self.assertLessEqual(max(c["max"] for c in f.claims), 2 + runner.PREFETCH)
        self.assertIn("task_0 attempt 1: started", proc.stdout)
        self.assertIn("task_0 attempt 1: complete in", proc.stdout)
        self.assertIn("task_bad attempt 1: failed (TypeError", proc.stdout)  # failures always
        del digest

    def test_blob_arguments_and_results(self):
        arg = pickle.dumps(((3 << 20,), {}), protocol=4)
        digest = hashlib.sha256(arg).hexdigest()
        f = self.fake(function_info("big"), [task("task_big", {"blob": digest})])
        f.blobs[digest] = arg
        proc = f.run_runner()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        res = f.done["task_big"]["result"]
        self.assertEqual(set(res), {"blob"})
        self.assertEqual(pickle.loads(f.blobs[res["blob"]]), b"x" * (3 << 20))

    def test_exception_and_dotted_qualname(self):
        f = self.fake(function_info("boom"), [task("task_1", args_payload("bad input"))])
        proc = f.run_runner()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        fail = f.done["task_1"]["failure"]
        self.assertEqual(fail["message"], "ValueError: bad input")
        self.assertNotIn("runner.py", fail["traceback"])  # the function's frames only
        f = self.fake(function_info("Holder.nested"), [task("task_2", args_payload(21))])
        self.assertEqual(f.run_runner().returncode, 0)
        self.assertEqual(pickle.loads(base64.b64decode(f.done["task_2"]["result"]["data"])), 42)

    def test_timeout_is_reported_then_the_runner_exits(self):
        f = self.fake(function_info("slow"), [task("task_slow", args_payload(30), timeout=1)], exit_when_done=False)
        start = time.monotonic()
        proc = f.run_runner()
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertLess(time.monotonic() - start, 20)
        fail = f.done["task_slow"]["failure"]
        self.assertEqual(fail["kind"], "timeout")
        self.assertIn("timed out after 1 s", proc.stdout)

    def test_import_failure_fails_every_call(self):
        f = self.fake(function_info("f", module="no_such_module"), [task("task_1", args_payload())])
        proc = f.run_runner()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        fail = f.done["task_1"]["failure"]
        self.assertIn("importing no_such_module.f: ModuleNotFoundError", fail["message"])
        self.assertIn("No module named 'no_such_module'", fail["traceback"])

    def test_calls_from_inside_a_container(self):
        from tests.apps.unit import unitfns
        f = self.fake(function_info("add"), [])
        with mock.patch.dict(os.environ, {"LEVERS9_RUNNER_SOCKET": f.path}), \
                mock.patch.object(backends, "_runner_backend", None):
            self.assertEqual(unitfns.add.remote(1, b=2), "inner ok")
            call = unitfns.boom.spawn("x")
            self.assertEqual(call.object_id, "task_inner")
            backends.runner_backend().api.close()
        (path1, call_doc), (path2, await_doc) = f.calls[:2]
        self.assertEqual((path1, call_doc["function"]), ("/runner/v1/call", "add"))
        self.assertEqual(payload.decode_args(call_doc["args"], None), ((1,), {"b": 2}))
        self.assertEqual((path2, await_doc["task"]), ("/runner/v1/await", "task_inner"))
        self.assertEqual(f.calls[2][1]["function"], "boom")

    def test_no_socket(self):
        env = dict(os.environ, PYTHONPATH=SDK)
        env.pop("LEVERS9_RUNNER_SOCKET", None)
        proc = subprocess.run([sys.executable, "-m", "levers9.runner"], env=env, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("LEVERS9_RUNNER_SOCKET", proc.stderr)


class CommandTest(unittest.TestCase):
    def run_cli(self, *args):
        env = dict(os.environ, PYTHONPATH=SDK, LEVERS9_SERVER="http://127.0.0.1:1", LEVERS9_TOKEN="lv9_x",
                   LEVERS9_CONFIG=os.path.join(tempfile.gettempdir(), "no-levers9-config"))
        return subprocess.run([sys.executable, "-m", "levers9"] + list(args), env=env, capture_output=True,
                              text=True, timeout=60)

    def test_clear_errors(self):
        self.assertEqual(self.run_cli().returncode, 2)
        p = self.run_cli("run", os.path.join(UNIT_APP, "unitfns.py"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no local entrypoint", p.stderr)
        p = self.run_cli("run", os.path.join(UNIT_APP, "unitfns.py") + "::nope")
        self.assertIn("no local entrypoint 'nope'", p.stderr)
        p = self.run_cli("run", "/no/such/app.py")
        self.assertIn("is not a Python file", p.stderr)


if __name__ == "__main__":
    unittest.main()

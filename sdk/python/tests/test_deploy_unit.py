"""Deployments without a server: the decorators' FunctionInputs, deploy,
lookup and put requests against a fake GraphQL client, dead letters, and
serve's change detection and redeploys (the real path runs in the Go
end-to-end tests)."""

import base64
import os
import pickle
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import levers9
from levers9 import backend as backends
from levers9 import deploy, functions, serve

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT_APP = os.path.join(SDK, "tests", "apps", "unit")


def handler(x):
    return x


async def ws_handler(ws):
    pass


class FakeHTTP:
    timeout = 30.0


class FakeClient:
    """client.graphql answering from a table keyed by the operation's
    field; records (query, variables, idempotent)."""

    default_queue = "default"
    default_project = ""
    server = "http://h"

    def __init__(self, answers):
        self.answers = answers
        self.requests = []
        self._http = FakeHTTP()

    def graphql(self, query, variables=None, idempotent=None):
        self.requests.append((query, variables or {}, idempotent))
        for field, answer in self.answers.items():
            if field + "(" in query:
                return {field: answer(variables) if callable(answer) else answer}
        raise AssertionError("unexpected request: " + query)


def decoded(p):
    return pickle.loads(base64.b64decode(p["data"]))


class DecoratorTest(unittest.TestCase):
    def inputs(self, decorate):
        app = levers9.App("kinds")
        fn = decorate(app)(handler)
        return fn, fn._input("mod", FakeClient({}))

    def test_each_kind_and_its_defaults(self):
        base = {"name": "handler", "module": "mod", "qualname": "handler", "queue": "default"}
        cases = [
            (lambda a: a.function(), {"kind": "FUNCTION"}),
            (lambda a: a.endpoint(), {"kind": "ENDPOINT", "httpMethod": "POST", "syncTimeoutSeconds": 60,
                                      "public": False}),
            (lambda a: a.endpoint(method="get", sync_timeout=300, public=True, cpu=2),
             {"kind": "ENDPOINT", "httpMethod": "GET", "syncTimeoutSeconds": 300, "public": True, "cpu": 2}),
            (lambda a: a.endpoint(method=None), {"kind": "ENDPOINT", "syncTimeoutSeconds": 60, "public": False}),
            (lambda a: a.asgi(), {"kind": "ASGI", "syncTimeoutSeconds": 60, "public": False}),
            (lambda a: a.task_queue(), {"kind": "TASK_QUEUE", "retries": 3}),
            (lambda a: a.task_queue(retries=5, max_containers=4), {"kind": "TASK_QUEUE", "retries": 5,
                                                                   "maxContainers": 4}),
            (lambda a: a.schedule(cron="*/15  * * * *"), {"kind": "CRON", "cron": "*/15 * * * *"}),
            (lambda a: a.schedule(cron="@hourly"), {"kind": "CRON", "cron": "@hourly"}),
            (lambda a: a.function(name="dl", secrets=["hf", "s3"], queue="gpu"),
             {"kind": "FUNCTION", "name": "dl", "deployment": "dl", "secrets": ["hf", "s3"], "queue": "gpu"}),
            (lambda a: a.endpoint(secrets="hf"), {"kind": "ENDPOINT", "httpMethod": "POST",
                                                  "syncTimeoutSeconds": 60, "public": False, "secrets": ["hf"]}),
        ]
        for i, (decorate, want) in enumerate(cases):
            with self.subTest(case=i):
                fn, got = self.inputs(decorate)
                self.assertEqual(got, dict(base, **want))
                self.assertEqual(fn.kind, want["kind"])

    def test_realtime_wants_an_async_handler(self):
        app = levers9.App("rt")
        fn = app.realtime(public=True)(ws_handler)
        self.assertEqual(fn._input("mod", FakeClient({}))["kind"], "REALTIME")
        with self.assertRaises(levers9.BadInput):
            app.realtime()(handler)

    def test_bad_specs(self):
        app = levers9.App("bad")
        for make in (lambda: app.schedule(cron="* * *"), lambda: app.schedule(cron="TZ=UTC * * * * *"),
                     lambda: app.schedule(cron="@sometimes"), lambda: app.schedule(cron=""),
                     lambda: app.endpoint(method="PO ST"), lambda: app.endpoint(sync_timeout=0),
                     lambda: app.endpoint(public="yes"), lambda: app.function(secrets=[""]),
                     lambda: app.function(name=""), lambda: app.task_queue(retries=-1),
                     lambda: app.endpoint(no_such_option=1)):
            with self.assertRaises(levers9.BadInput):
                make()

    def test_put_is_for_task_queues(self):
        app = levers9.App("notq")
        fn = app.function()(handler)
        with self.assertRaises(levers9.BadInput) as cm:
            fn.put(1)
        self.assertIn("not a task queue", str(cm.exception))


def deployed_app(version):
    return {"id": "app_1", "name": "shop", "state": "DEPLOYED", "version": version, "liveVersion": version,
            "functions": [
                {"id": "fn_old", "name": "predict", "version": version - 1, "kind": "ENDPOINT",
                 "deployment": "predict", "urls": []},
                {"id": "fn_p", "name": "predict", "version": version, "kind": "ENDPOINT", "deployment": "predict",
                 "urls": ["http://h/endpoint/predict/v%d" % version, "http://h/endpoint/predict"]},
                {"id": "fn_q", "name": "resize", "version": version, "kind": "TASK_QUEUE", "deployment": "resize",
                 "urls": ["http://h/queue/resize/v%d" % version]},
                {"id": "fn_c", "name": "refresh", "version": version, "kind": "CRON", "deployment": "refresh",
                 "urls": []},
                {"id": "fn_j", "name": "job", "version": version, "kind": "FUNCTION", "deployment": "job",
                 "urls": ["/job/job/v%d" % version]},  # a server without a public URL answers paths
            ]}


def resize(path):
    return path


def refresh():
    pass


class DeployTest(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.object(backends.GraphQLBackend, "upload_code", lambda self, digest, data: False)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_deploy_sends_deploy_true_and_keeps_the_new_version(self):
        client = FakeClient({"deployApp": deployed_app(3),
                             "putTask": lambda v: {"id": "task_9", "state": "PENDING"}})
        app = levers9.App("shop", client=client)
        predict = app.endpoint()(handler)
        predict.name = "predict"
        app.functions = {"predict": predict}
        queue = app.task_queue()(resize)
        app.schedule(cron="@daily")(refresh)
        with tempfile.TemporaryDirectory() as project:
            result = app.deploy(project)
        query, variables, _ = client.requests[0]
        self.assertIn("urls", query)
        i = variables["i"]
        self.assertEqual((i["name"], i["deploy"]), ("shop", True))
        self.assertEqual({f["name"]: f["kind"] for f in i["functions"]},
                         {"predict": "ENDPOINT", "resize": "TASK_QUEUE", "refresh": "CRON"})
        self.assertEqual(result.version, 3)
        self.assertEqual([f["id"] for f in result.functions], ["fn_p", "fn_q", "fn_c", "fn_j"])
        self.assertEqual(result.urls["job"], ["http://h/job/job/v3"])
        self.assertEqual(result.urls["predict"], ["http://h/endpoint/predict/v3", "http://h/endpoint/predict"])
        self.assertEqual(queue.urls, ["http://h/queue/resize/v3"])
        lines = deploy.describe(result.functions, {"refresh": "@daily"})
        self.assertIn("http://h/endpoint/predict/v3", "\n".join(lines))
        self.assertIn("cron @daily (UTC)", "\n".join(lines))

        call = queue.put({"path": "a.png"}, idempotency_key="k1")
        self.assertEqual(call.object_id, "task_9")
        query, variables, idempotent = client.requests[-1]
        self.assertIn("putTask(function: $f, item: $i, idempotencyKey: $k)", query)
        self.assertEqual((variables["f"], variables["k"], idempotent), ("fn_q", "k1", True))
        self.assertEqual(decoded(variables["i"]), (({"path": "a.png"},), {}))
        queue.put(2)
        self.assertEqual((client.requests[-1][1]["k"], client.requests[-1][2]), (None, False))
        with self.assertRaises(levers9.BadInput):
            queue.put(1, idempotency_key="x" * 201)

    def test_ephemeral_deploys_do_not_ask_for_deploy(self):
        client = FakeClient({"deployApp": {"id": "app_e", "name": "e", "state": "RUNNING",
                                           "functions": [{"id": "fn_e", "name": "handler"}]},
                             "stopApp": {"id": "app_e", "state": "STOPPED"}})
        app = levers9.App("e", client=client)
        app.function()(handler)
        with tempfile.TemporaryDirectory() as project:
            app.deploy_ephemeral(project)
        app.stop()
        self.assertNotIn("deploy", client.requests[0][1]["i"])


class LookupTest(unittest.TestCase):
    def client(self):
        return FakeClient({
            "lookupFunction": lambda v: {"id": "fn_7", "name": v["n"], "version": v["v"] or 4, "kind": "TASK_QUEUE",
                                         "deployment": v["n"], "urls": ["/queue/%s/v4" % v["n"]]},
            "callFunction": lambda v: {"id": "task_c", "state": "PENDING"},
            "putTask": lambda v: {"id": "task_p", "state": "PENDING"},
            "awaitTask": lambda v: {"id": v["id"], "state": "DEAD", "errorKind": "exception",
                                    "errorMessage": "ValueError: bad item"},
        })

    def test_lookup_then_call_and_put(self):
        client = self.client()
        fn = levers9.Function.lookup("shop", "resize", version=2, client=client)
        query, variables, _ = client.requests[0]
        self.assertIn("lookupFunction(app: $a, name: $n, version: $v)", query)
        self.assertEqual(variables, {"a": "shop", "n": "resize", "v": 2})
        self.assertEqual((fn.kind, fn.urls, repr(fn)), ("TASK_QUEUE", ["http://h/queue/resize/v4"],
                                                        "Function(shop.resize)"))
        self.assertEqual(fn.spawn(1, b=2).object_id, "task_c")
        self.assertEqual(client.requests[-1][1]["f"], "fn_7")
        self.assertEqual(decoded(client.requests[-1][1]["a"]), ((1,), {"b": 2}))
        call = fn.put("x.png")
        self.assertEqual((call.object_id, client.requests[-1][1]["f"]), ("task_p", "fn_7"))
        # A dead letter is a failed end.
        with self.assertRaises(levers9.RemoteError) as cm:
            call.get()
        self.assertEqual(call.state, "DEAD")
        self.assertIn("bad item", str(cm.exception))
        with self.assertRaises(levers9.Error):
            fn.local(1)
        self.assertIn("DEAD", functions.ENDED)

    def test_a_looked_up_function_pickles_by_id(self):
        fn = levers9.Function.lookup("shop", "resize", client=self.client())
        again = pickle.loads(pickle.dumps(fn))
        self.assertEqual((again.name, again.kind, again._remote["id"], again.app.name),
                         ("resize", "TASK_QUEUE", "fn_7", "shop"))

    def test_bad_version(self):
        with self.assertRaises(levers9.BadInput):
            levers9.Function.lookup("shop", "resize", version=0, client=self.client())


class FakeDeployment:
    def __init__(self, n):
        self.app_id = "app_%d" % n


class FakeServer(serve.Server):
    """serve's loop with the import, deploy and stop steps recorded."""

    def __init__(self, project, fail_load=False):
        self.printed = []
        self.logs = []
        super().__init__(os.path.join(project, "app.py"), out=self.printed.append, log=self.logs.append)
        self.project = project
        self.on_load = None
        self.deployed = []
        self.stopped = []
        self.fail_load = fail_load

    def load(self):
        if self.on_load:
            self.on_load()
        if self.fail_load:
            raise levers9.BadInput("importing app.py failed (see above)")
        return {"app": "svc", "project": self.project, "functions": [{"name": "predict", "kind": "ENDPOINT"}]}

    def deploy(self, spec):
        n = len(self.deployed) + 1
        self.deployed.append(spec)
        return FakeDeployment(n), {"id": "app_%d" % n, "functions": [
            {"name": "predict", "kind": "ENDPOINT", "urls": ["http://h/endpoint/predict/app_%d" % n]}]}

    def stop(self, dep):
        self.stopped.append(dep.app_id)


def touch(path, text="x = 1\n", at=None):
    with open(path, "w") as f:
        f.write(text)
    if at is not None:
        os.utime(path, (at, at))


class ServeTest(unittest.TestCase):
    def project(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        touch(os.path.join(d.name, "app.py"), at=1000)
        return d.name

    def test_watcher_sees_python_files_only(self):
        root = self.project()
        w = serve.Watcher(root)
        self.assertEqual(w.changed(), [])
        touch(os.path.join(root, "app.py"), "x = 22\n", at=1000)  # same time, new size
        self.assertEqual(w.changed(), ["app.py"])
        touch(os.path.join(root, "notes.txt"))
        os.makedirs(os.path.join(root, "__pycache__"))
        touch(os.path.join(root, "__pycache__", "c.py"))
        self.assertEqual(w.changed(), [])
        os.makedirs(os.path.join(root, "pkg"))
        touch(os.path.join(root, "pkg", "m.py"))
        self.assertEqual(w.changed(), ["pkg/m.py"])
        os.utime(os.path.join(root, "pkg", "m.py"), (2000, 2000))
        self.assertEqual(w.changed(), ["pkg/m.py"])
        os.unlink(os.path.join(root, "pkg", "m.py"))
        self.assertEqual(w.changed(), ["pkg/m.py"])

    def test_a_saved_file_redeploys_then_stops_the_old_app(self):
        root = self.project()
        s = FakeServer(root)
        self.assertEqual(s.start(), 0)
        self.assertEqual(s.printed, ["  ENDPOINT   predict              http://h/endpoint/predict/app_1"])
        self.assertFalse(s.step())  # nothing changed
        touch(os.path.join(root, "app.py"), at=2000)
        self.assertTrue(s.step())
        self.assertEqual((len(s.deployed), s.stopped, s.current.app_id), (2, ["app_1"], "app_2"))
        self.assertIn("http://h/endpoint/predict/app_2", s.printed[-1])
        self.assertTrue(any(line.startswith("redeployed in ") for line in s.logs), s.logs)
        # A change that does not import leaves app_2 serving.
        s.fail_load = True
        touch(os.path.join(root, "app.py"), at=3000)
        self.assertFalse(s.step())
        self.assertEqual((s.current.app_id, s.stopped), ("app_2", ["app_1"]))
        self.assertIn("previous version keeps serving", s.logs[-1])
        s.close()
        self.assertEqual(s.stopped, ["app_1", "app_2"])

    def test_the_loop_polls_and_ctrl_c_stops(self):
        root = self.project()
        s = FakeServer(root)
        s.interval = 0.01
        steps = []
        real_step = s.step

        def step():
            steps.append(1)
            if len(steps) == 3:
                touch(os.path.join(root, "app.py"), at=5000)
            if len(steps) == 6:
                raise KeyboardInterrupt
            return real_step()
        s.step = step
        self.assertEqual(s.run(), 130)
        self.assertEqual(s.stopped, ["app_1", "app_2"])

    def test_a_save_during_the_first_deploy_is_deployed_next(self):
        root = self.project()
        s = FakeServer(root)
        s.on_load = lambda: touch(os.path.join(root, "app.py"), "x = 3\n", at=4000)
        self.assertEqual(s.start(), 0)
        s.on_load = None
        self.assertTrue(s.step())
        self.assertEqual(len(s.deployed), 2)

    def test_first_load_failure_exits_2(self):
        s = FakeServer(self.project(), fail_load=True)
        self.assertEqual(s.start(), 2)
        self.assertEqual(s.deployed, [])

    def test_load_spec_imports_in_a_fresh_process(self):
        spec = serve.load_spec(os.path.join(UNIT_APP, "unitfns.py"), None, "renamed")
        self.assertEqual(spec["app"], "renamed")
        self.assertEqual(spec["project"], UNIT_APP)
        add = next(f for f in spec["functions"] if f["name"] == "add")
        self.assertEqual(add, {"name": "add", "module": "unitfns", "qualname": "add", "concurrency": 2,
                               "kind": "FUNCTION"})
        with self.assertRaises(levers9.BadInput):
            serve.load_spec(os.path.join(UNIT_APP, "unitfns.py"), "no-such-app", None)


class CommandTest(unittest.TestCase):
    def run_cli(self, *args):
        env = dict(os.environ, PYTHONPATH=SDK, LEVERS9_SERVER="http://127.0.0.1:1", LEVERS9_TOKEN="lv9_x",
                   LEVERS9_CONFIG=os.path.join(tempfile.gettempdir(), "no-levers9-config"))
        return subprocess.run([sys.executable, "-m", "levers9"] + list(args), env=env, capture_output=True,
                              text=True, timeout=60)

    def test_usage_errors(self):
        for args in (("deploy",), ("serve",), ("deploy", "/no/such/app.py"), ("serve", "/no/such/app.py"),
                     ("deploy", os.path.join(UNIT_APP, "unitfns.py"), "--name"),
                     ("deploy", os.path.join(UNIT_APP, "unitfns.py") + "::nope")):
            with self.subTest(args=args):
                p = self.run_cli(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("no app 'nope'", p.stderr)

    def test_parse_args(self):
        self.assertEqual(deploy.parse_args(["a.py::web", "--name=x"], "deploy"),
                         {"script": "a.py", "app": "web", "name": "x"})
        with self.assertRaises(levers9.BadInput):
            deploy.parse_args(["a.py", "b.py"], "deploy")


if __name__ == "__main__":
    unittest.main()

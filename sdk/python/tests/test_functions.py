"""Serverless functions end to end on a real server and its built-in node
(the process runtime): the app in tests/apps/fnapp deployed once for the
class, then the CLI (python -m levers9 run) on its own."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest
import uuid

import levers9
from tests import support

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FNAPP = os.path.join(SDK, "tests", "apps", "fnapp")


def import_fnapp():
    """The test app, imported as the runner imports it: module fnapp from
    its own folder (the project folder packed)."""
    if FNAPP not in sys.path:
        sys.path.insert(0, FNAPP)
    import fnapp
    return fnapp


class FunctionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = support.admin_client()
        cls.fnapp = import_fnapp()
        cls.app = cls.fnapp.app
        cls.app.client = cls.client
        cls.running = cls.app.run()
        cls.running.__enter__()
        cls.app_id = cls.app.app_id

    @classmethod
    def tearDownClass(cls):
        cls.running.__exit__(None, None, None)
        state = cls.client.graphql("query($id: ID!) { node(id: $id) { ... on App { state } } }",
                                   {"id": cls.app_id})["node"]["state"]
        assert state == "STOPPED", state

    def test_heartbeat_keeps_the_app_alive(self):
        dep = self.app._deployment
        query = "query($id: ID!) { node(id: $id) { ... on App { state lastSeenAt } } }"
        before = self.client.graphql(query, {"id": self.app_id})["node"]["lastSeenAt"]
        dep.backend.heartbeat_app(self.app_id)
        after = self.client.graphql(query, {"id": self.app_id})["node"]
        self.assertEqual(after["state"], "RUNNING")
        self.assertNotEqual(after["lastSeenAt"], before)
        self.assertTrue(dep._beat.is_alive())

    def test_remote(self):
        self.assertEqual(self.fnapp.square.remote(7), 49)
        self.assertEqual(self.fnapp.square.remote(x=3), 9)

    def test_map_of_1000_items_in_order(self):
        m = self.fnapp.square.map(range(1000))
        self.assertTrue(m.object_id.startswith("map_"))
        self.assertEqual(list(m), [i * i for i in range(1000)])
        unordered = list(self.fnapp.square.map(range(100), order_outputs=False))
        self.assertEqual(sorted(unordered), [i * i for i in range(100)])

    def test_spawn_and_get(self):
        call = self.fnapp.square.spawn(12)
        self.assertTrue(call.object_id.startswith("task_"))
        self.assertEqual(call.get(timeout=120), 144)
        info = call.info()
        self.assertEqual(info["state"], "COMPLETE")
        self.assertLessEqual(info["phases"]["queuedAt"], info["phases"]["startedAt"])
        self.assertLessEqual(info["phases"]["startedAt"], info["phases"]["finishedAt"])
        again = levers9.FunctionCall.from_id(call.object_id, client=self.client)
        self.assertEqual(again.get(timeout=10), 144)

    def test_exception_with_traceback(self):
        with self.assertRaises(levers9.RemoteError) as cm:
            self.fnapp.square.remote(1) and self.fnapp.fail.remote("it broke")
        e = cm.exception
        self.assertEqual(e.kind, "exception")
        self.assertIn("Oops: it broke", e.message)
        self.assertIn("raise Oops(message)", e.traceback)
        self.assertIsInstance(e.exception, self.fnapp.Oops)
        self.assertTrue(e.task_id.startswith("task_"))
        got = list(self.fnapp.fail.map(["a", "b"], return_exceptions=True))
        self.assertEqual([str(x.exception) for x in got], ["a", "b"])

    def test_retries(self):
        key = uuid.uuid4().hex
        self.assertEqual(self.fnapp.flaky.remote(key), "second attempt")

    def test_timeout(self):
        with self.assertRaises(levers9.FunctionTimeoutError) as cm:
            self.fnapp.sleepy.remote(60)
        self.assertEqual(cm.exception.kind, "timeout")
        self.assertEqual(self.fnapp.sleepy.remote(0), 0)  # a new container takes over

    def test_cancel(self):
        call = self.fnapp.long_sleep.spawn(600)
        with self.assertRaises(TimeoutError):
            call.get(timeout=1)
        call.cancel()
        with self.assertRaises(levers9.CallCancelledError):
            call.get(timeout=120)

    def test_function_calling_another(self):
        self.assertEqual(self.fnapp.pipeline.remote(4), {"remote": 16, "map": [0, 1, 4, 9], "spawned": 25})

    def test_resume_a_map_by_id(self):
        m = self.fnapp.square.map(range(300))
        first = [next(m) for _ in range(5)]
        map_id = m.object_id
        del m  # the client that started it is gone
        resumed = levers9.FunctionMap.from_id(map_id, start=5, client=self.client)
        self.assertEqual(first + list(resumed), [i * i for i in range(300)])
        self.assertEqual(list(self.fnapp.square.map_resume(map_id, start=298)), [298 * 298, 299 * 299])

    def test_large_payloads_go_through_blobs(self):
        data = os.urandom(3 << 20)
        self.assertEqual(self.fnapp.size.remote(data), len(data))
        self.assertEqual(self.fnapp.blob.remote(2 << 20), b"y" * (2 << 20))


class CommandTest(unittest.TestCase):
    """python -m levers9 run: deploy, entrypoint, stop; Ctrl-C."""

    def setUp(self):
        self.client = support.admin_client()

    def cli(self, *args, **kwargs):
        env = dict(os.environ, PYTHONPATH=SDK, PYTHONUNBUFFERED="1")
        return subprocess.Popen([sys.executable, "-m", "levers9", "run"] + list(args), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)

    def app_state(self, stderr):
        app_id = stderr.split(" deployed as ", 1)[1].split()[0]
        return self.client.graphql("query($id: ID!) { node(id: $id) { ... on App { state } } }",
                                   {"id": app_id})["node"]["state"]

    def test_run_entrypoint_then_stop(self):
        p = self.cli(os.path.join(FNAPP, "fnapp.py") + "::main", "--n", "4")
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertEqual(json.loads(out.strip().splitlines()[-1]), {"squares": [0, 1, 4, 9], "one": 16})
        self.assertEqual(self.app_state(err), "STOPPED")

    def test_ctrl_c_stops_the_app_and_its_calls(self):
        p = self.cli(os.path.join(FNAPP, "fnapp.py") + "::hang")
        line = p.stdout.readline()
        call_id = json.loads(line)["call"]
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 130, out + err)
        self.assertEqual(self.app_state(err), "STOPPED")
        with self.assertRaises(levers9.CallCancelledError):
            levers9.FunctionCall.from_id(call_id, client=self.client).get(timeout=60)


if __name__ == "__main__":
    unittest.main()

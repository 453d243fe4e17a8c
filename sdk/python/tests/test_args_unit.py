"""Python-style arguments and their wire form, without a server: each
request the client would send is caught and read instead."""

import io
import json
import unittest
from unittest import mock

import levers9

JOB = {"id": "job_1", "name": "", "status": "PENDING", "services": []}


class Recorder:
    """Stands in for the transport: records GraphQL requests and answers
    what a server would."""

    def __init__(self):
        self.requests = []

    def fetch(self, method, path, body=None, headers=None, idempotent=True, auth=True):
        doc = json.loads(body)
        self.requests.append(doc)
        q = doc["query"]
        if "submitJob" in q:
            data = {"submitJob": JOB}
        elif "estimateJobCost" in q:
            data = {"estimateJobCost": {"startFee": 1, "perMinute": 2, "minutes": 3, "total": 7}}
        else:
            data = {}
        return json.dumps({"data": data}).encode()


def client():
    c = levers9.Client(server="http://127.0.0.1:1", token="lv9_test")
    rec = Recorder()
    c._http.fetch = rec.fetch
    return c, rec


class WireFormTest(unittest.TestCase):
    def test_snake_case_goes_out_in_camel_case(self):
        c, rec = client()
        c.submit_job(["python", "train.py"], queue="gpu", project="vision", name="train", image="pytorch",
                     env={"A": "1"}, cpu=2, memory_mib=4096, gpus=1, gpu_types="H100", ports={"http": 8080},
                     mounts=[{"bucket": "data", "path": "/data", "read_only": True}], priority=5,
                     timeout_seconds=600, retries=2, interactive=False)
        self.assertEqual(rec.requests[0]["variables"]["s"], {
            "queue": "gpu", "project": "vision", "name": "train", "priority": 5, "timeoutSeconds": 600,
            "retries": 2, "interactive": False,
            "mounts": [{"bucket": "data", "path": "/data", "readOnly": True}],
            "services": [{"name": "main", "command": ["python", "train.py"], "image": "pytorch",
                          "env": [{"name": "A", "value": "1"}], "cpu": 2, "memoryMiB": 4096, "gpus": 1,
                          "gpuTypes": ["H100"], "ports": [{"name": "http", "port": 8080}]}],
        })

    def test_services_and_resources_take_both_spellings(self):
        c, rec = client()
        c.submit_job(services=[
            {"name": "a", "command": ["true"], "memory_mib": 64, "gpu_types": ["H100", "A100"], "env": {"X": "y"}},
            {"name": "b", "command": ["true"], "memoryMiB": 64, "gpuTypes": ["A100"],
             "env": [{"name": "X", "value": "y"}]},
        ], queue="q")
        services = rec.requests[0]["variables"]["s"]["services"]
        self.assertEqual(services[0], {"name": "a", "command": ["true"], "memoryMiB": 64,
                                       "gpuTypes": ["H100", "A100"], "env": [{"name": "X", "value": "y"}]})
        self.assertEqual(services[1], {"name": "b", "command": ["true"], "memoryMiB": 64, "gpuTypes": ["A100"],
                                       "env": [{"name": "X", "value": "y"}]})
        c.submit_job(["true"], queue="q", resources={"cpu": 1, "memoryMiB": 128, "gpu_types": ["L4"]})
        self.assertEqual(rec.requests[1]["variables"]["s"]["services"][0],
                         {"name": "main", "command": ["true"], "cpu": 1, "memoryMiB": 128, "gpuTypes": ["L4"]})

    def test_old_timeout_seconds_keyword_still_works(self):
        c, rec = client()
        c.submit_job(["true"], queue="q", timeoutSeconds=30)
        self.assertEqual(rec.requests[0]["variables"]["s"]["timeoutSeconds"], 30)
        with self.assertRaises(levers9.BadInput):
            c.submit_job(["true"], queue="q", timeoutSeconds=30, timeout_seconds=30)

    def test_estimate_builds_the_same_spec(self):
        c, rec = client()
        e = c.estimate(["true"], queue="q", gpus=1, gpu_types=["H100"], memory_mib=256, minutes=3)
        self.assertEqual(e.total, 7)
        self.assertEqual(rec.requests[0]["variables"], {
            "s": {"queue": "q", "services": [{"name": "main", "command": ["true"], "memoryMiB": 256, "gpus": 1,
                                              "gpuTypes": ["H100"]}]}, "m": 3})


class UnknownArgumentTest(unittest.TestCase):
    """Every misspelling is refused before any request, named, with the
    closest spelling; a TypeError and a levers9.BadInput."""

    def assertRefused(self, call, name, hint, rec=None):
        with self.assertRaises(TypeError) as cm:
            call()
        e = cm.exception
        self.assertIsInstance(e, levers9.BadInput)
        self.assertIsInstance(e, levers9.UnknownArgument)
        self.assertIn(repr(name), str(e))
        self.assertEqual(e.field, name)
        if hint:
            self.assertIn("did you mean %r?" % hint, str(e))
        if rec is not None:
            self.assertEqual(rec.requests, [], "a request was sent")
        return e

    def test_submit_job(self):
        c, rec = client()
        cases = [
            ({"timeout": 60}, "timeout", "timeout_seconds"),
            ({"gpu_type": "H100"}, "gpu_type", "gpu_types"),
            ({"gpuTypes": ["H100"]}, "gpuTypes", "gpu_types"),  # camelCase keywords never worked
            ({"memoryMiB": 64}, "memoryMiB", "memory_mib"),
            ({"memory": 64}, "memory", "memory_mib"),
            ({"idempotencyKey": "k"}, "idempotencyKey", "idempotency_key"),
            ({"wibble": 1}, "wibble", None),
        ]
        for kwargs, name, hint in cases:
            with self.subTest(kwargs=kwargs):
                e = self.assertRefused(lambda: c.submit_job(["true"], queue="q", **kwargs), name, hint, rec)
                self.assertTrue(str(e).startswith("submit_job() got an unexpected keyword argument"), str(e))

    def test_dict_keys(self):
        c, rec = client()
        e = self.assertRefused(lambda: c.submit_job(services=[{"name": "a", "command": ["true"], "memory": 64}]),
                               "memory", "memory_mib", rec)
        self.assertIn("services[0] got an unexpected key 'memory'", str(e))
        self.assertRefused(lambda: c.submit_job(["true"], resources={"gpuType": "H100"}), "gpuType", "gpu_types", rec)
        self.assertRefused(lambda: c.submit_job(["true"], mounts=[{"bucket": "b", "path": "/b", "readonly": True}]),
                           "readonly", "read_only", rec)
        self.assertRefused(lambda: c.submit_job(services=[{"name": "a", "command": ["true"],
                                                           "env": [{"name": "A", "val": "1"}]}]),
                           "val", "value", rec)

    def test_other_methods(self):
        c, rec = client()
        self.assertRefused(lambda: levers9.Client(server="http://127.0.0.1:1", tokn="x"), "tokn", "token")
        self.assertRefused(lambda: levers9.Client.sign_in("a@b.c", "pw", sever="http://x"), "sever", "server")
        self.assertRefused(lambda: c.estimate(["true"], minute=5), "minute", "minutes", rec)
        self.assertRefused(lambda: c.jobs(stauts="RUNNING"), "stauts", "status", rec)
        self.assertRefused(lambda: c.graphql("{ viewer { admin } }", variabels={}), "variabels", "variables", rec)
        job = levers9.Job(c, {"id": "job_1"})
        self.assertRefused(lambda: job.wait(timout=1), "timout", "timeout", rec)
        self.assertRefused(lambda: job.logs(folow=True), "folow", "follow", rec)
        self.assertRefused(lambda: c.buckets.upload("b", "k", b"x", overwrite=True), "overwrite", None, rec)
        self.assertRefused(lambda: c.buckets.create("b", storag="local"), "storag", "storage", rec)
        self.assertRefused(lambda: c.buckets.download("b", "k", dst="x"), "dst", "dest", rec)
        app = levers9.App("spell")
        self.assertRefused(lambda: app.function(gpus=1), "gpus", "gpu")
        self.assertRefused(lambda: app.endpoint(sync_timout=5), "sync_timout", "sync_timeout")

    def test_mistakes_in_values_are_bad_input(self):
        c, rec = client()
        for call in (
            lambda: c.submit_job("echo hi"),                       # a string, not a list
            lambda: c.submit_job(services=[{"name": "a", "command": "echo hi"}]),
            lambda: c.submit_job(services=[{"name": "a", "command": ["true"]}], image="busybox"),
            lambda: c.submit_job(["true"], cpu=1, resources={"cpu": 2}),
            lambda: c.submit_job(services=[{"name": "a", "memory_mib": 1, "memoryMiB": 1}]),
            lambda: c.submit_job(),
        ):
            with self.assertRaises(levers9.BadInput):
                call()
        with self.assertRaises(levers9.BadInput) as cm:
            c.buckets.upload("b", "k", io.StringIO("text"))
        self.assertIn("binary", str(cm.exception))
        with self.assertRaises(levers9.BadInput) as cm:
            c.buckets.upload("b", "dir/", b"bytes")
        self.assertEqual(cm.exception.field, "key")
        self.assertEqual(rec.requests, [])

    def test_checked_keeps_the_signature(self):
        import inspect
        self.assertIn("timeout_seconds", inspect.signature(levers9.Client.submit_job).parameters)
        self.assertIn("follow", inspect.signature(levers9.Job.logs).parameters)
        self.assertTrue(levers9.Client.sign_in.__doc__)


class UploadSourceTest(unittest.TestCase):
    """What upload sends for each kind of source, seen at the transport."""

    def sent(self, source, key="k"):
        c, _ = client()
        seen = {}

        def request(method, path, body=None, headers=None, idempotent=True, timeout=None, auth=True):
            seen["headers"] = dict(headers or {})
            seen["reads"] = []
            data = b""
            while True:  # as http.client reads a body
                chunk = body.read(8192)
                if not chunk:
                    break
                seen["reads"].append(len(chunk))
                data += chunk
            seen["data"] = data
            seen["rewindable"] = hasattr(body, "seek")
            return mock.MagicMock(**{"__enter__.return_value.read.return_value":
                                     json.dumps({"size": len(data)}).encode()})

        c._http.request = request
        n = c.buckets.upload("b", key, source)
        self.assertEqual(n, len(seen["data"]))
        return seen

    def test_bytes(self):
        seen = self.sent(bytearray(b"hello"))
        self.assertEqual((seen["data"], seen["headers"]["Content-Length"]), (b"hello", "5"))
        self.assertTrue(seen["rewindable"])

    def test_seekable_file_from_its_position(self):
        f = io.BytesIO(b"skip:rest")
        f.seek(5)
        seen = self.sent(f)
        self.assertEqual((seen["data"], seen["headers"]["Content-Length"]), (b"rest", "4"))

    def test_stream_goes_chunked_in_mib_pieces(self):
        total = 5 << 20

        class Pipe(io.RawIOBase):
            """A non-seekable stream that makes its bytes as they are read."""
            left = total
            biggest = 0

            def readable(self):
                return True

            def readinto(self, b):
                n = min(len(b), self.left)
                b[:n] = b"x" * n
                self.left -= n
                Pipe.biggest = max(Pipe.biggest, n)
                return n

        seen = self.sent(Pipe())
        self.assertNotIn("Content-Length", seen["headers"])
        self.assertFalse(seen["rewindable"], "a stream must not be retried")
        self.assertEqual(len(seen["data"]), total)
        self.assertLessEqual(Pipe.biggest, 1 << 20, "read whole into memory")
        self.assertGreater(len(seen["reads"]), 1)


if __name__ == "__main__":
    unittest.main()

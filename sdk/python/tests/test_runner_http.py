"""HTTP-made calls in the runner without a server: the envelopes, how each
kind answers one, and the runner process against the stand-in runner API
(tests/test_functions_unit.py) with HTTP, cron and pickled calls."""

import asyncio
import base64
import json
import os
import pickle
import unittest

from levers9 import httpcall, payload
from tests.test_functions_unit import FakeRunnerAPI, args_payload, b64, function_info, task


# Functions the runner subprocess imports from this module.

def predict(item):
    return {"got": item, "n": len(item)}


def greet(name, punct="!"):
    return "hello " + name + punct


def raw_bytes():
    return b"\x00\x01"


async def apredict(item):
    await asyncio.sleep(0)
    return {"async": item}


def broken(item):
    raise ValueError("no %s" % item)


async def abroken(item):
    raise ValueError("async no %s" % item)


def add(a, b=0):
    return a + b


def tick():
    return "ticked"


def web():
    async def app(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("no lifespan here")
        await send({"type": "http.response.start", "status": 201, "headers": [(b"x-path", scope["path"].encode())]})
        await send({"type": "http.response.body", "body": scope["root_path"].encode()})
    return app


def envelope(method="POST", path="/", query="", headers=(), body=b"", **extra):
    return httpcall.Request(method, path, query, list(headers), body, **extra)


def http_task(tid, req):
    return dict(task(tid, {"data": b64(req.to_json())}), source="HTTP")


def response_of(outcome):
    return httpcall.Response.from_json(base64.b64decode(outcome["result"]["data"]))


class EnvelopeTest(unittest.TestCase):
    def test_request_round_trip(self):
        req = envelope("post", "/a%20b", "x=1&y=2&x=3", [("Content-Type", "application/json")], b"\x00{}\xff",
                       root_path="/endpoint/web", scheme="https")
        back = httpcall.Request.from_json(req.to_json())
        self.assertEqual((back.method, back.path, back.query, back.headers, back.body, back.root_path, back.scheme),
                         ("POST", "/a%20b", "x=1&y=2&x=3", [("content-type", "application/json")], b"\x00{}\xff",
                          "/endpoint/web", "https"))
        self.assertEqual(back.params(), {"x": "3", "y": "2"})
        self.assertEqual(back.header("CONTENT-TYPE"), "application/json")
        # The documented wire form, as the front door writes it.
        doc = {"method": "GET", "path": "/rest", "query": "", "headers": [["accept", "*/*"]], "body": ""}
        got = httpcall.Request.from_json(json.dumps(doc).encode())
        self.assertEqual((got.method, got.path, got.body, got.root_path, got.scheme), ("GET", "/rest", b"", "", "http"))

    def test_bad_request_envelope(self):
        for data in (b"[]", b"{", b'{"body": "not base64!"}', b"\xff"):
            with self.assertRaisesRegex(ValueError, "request envelope"):
                httpcall.Request.from_json(data)

    def test_response_round_trip(self):
        resp = httpcall.Response(404, [("Content-Type", "text/plain")], b"\xffnope")
        back = httpcall.Response.from_json(resp.to_json())
        self.assertEqual((back.status, back.headers, back.body), (404, [("Content-Type", "text/plain")], b"\xffnope"))
        self.assertEqual(json.loads(resp.to_json())["body"], base64.b64encode(b"\xffnope").decode())

    def test_values(self):
        r = httpcall.value_response({"when": object})
        self.assertEqual((r.status, r.header("content-type")), (200, "application/json"))
        self.assertEqual(r.json(), {"when": str(object)})
        self.assertEqual(httpcall.value_response("hé").body, "hé".encode())
        self.assertIn("text/plain", httpcall.value_response("x").header("content-type"))
        self.assertEqual(httpcall.value_response(b"\x00").header("content-type"), "application/octet-stream")
        self.assertEqual(httpcall.value_response(None).body, b"null")


class KindsTest(unittest.TestCase):
    def test_endpoint_body_query_and_errors(self):
        r = httpcall.endpoint(predict, envelope(body=b'[1, 2]'))
        self.assertEqual((r.status, r.json()), (200, {"got": [1, 2], "n": 2}))
        r = httpcall.endpoint(greet, envelope("GET", query="name=ann&punct=%3F"))
        self.assertEqual((r.status, r.body), (200, b"hello ann?"))
        r = httpcall.endpoint(apredict, envelope(body=b'"x"'))
        self.assertEqual(r.json(), {"async": "x"})
        # The caller's errors: 400, as a result.
        r = httpcall.endpoint(predict, envelope(body=b"not json", headers=[("content-type", "text/plain")]))
        self.assertEqual(r.status, 400)
        self.assertIn("not JSON (content-type text/plain)", r.json()["error"]["message"])
        r = httpcall.endpoint(greet, envelope("GET", query="nom=ann"))
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, "BAD_REQUEST"))
        self.assertIn("greet(name, punct='!')", r.json()["error"]["message"])
        # The function's own errors are its failures.
        with self.assertRaisesRegex(ValueError, "no x"):
            httpcall.endpoint(broken, envelope(body=b'"x"'))

    def test_job_and_queue(self):
        r = httpcall.job(add, envelope(body=b'{"args": [1], "kwargs": {"b": 2}}'))
        self.assertEqual((r.status, r.json()), (200, 3))
        self.assertEqual(httpcall.job(tick, envelope(body=b"")).json(), "ticked")
        for body in (b"[1]", b'{"args": 1}', b'{"argz": []}', b'{"args": [1, 2, 3]}'):
            self.assertEqual(httpcall.job(add, envelope(body=body)).status, 400, body)
        r = httpcall.queue_item(predict, envelope(body=b'{"a": 1}'))
        self.assertEqual(r.json(), {"got": {"a": 1}, "n": 1})
        self.assertEqual(httpcall.queue_item(predict, envelope(body=b"")).status, 400)


def info(qualname, kind, concurrency=1):
    return dict(function_info(qualname, module="tests.test_runner_http", concurrency=concurrency), kind=kind)


class SignatureCacheTest(unittest.TestCase):
    def test_the_signature_is_worked_out_once_per_function(self):
        def echo(a=""):
            return a

        httpcall._cached_signature.cache_clear()
        for q in ("a=1", "a=2", "a=3"):
            self.assertEqual(httpcall.endpoint(echo, httpcall.Request(query=q)).body, q[2:].encode())
        self.assertEqual(httpcall.endpoint(echo, httpcall.Request(query="b=1")).status, 400)
        info = httpcall._cached_signature.cache_info()
        self.assertEqual((info.misses, info.hits), (1, 3))


class RunnerHTTPTest(unittest.TestCase):
    def fake(self, *args, **kwargs):
        f = FakeRunnerAPI(*args, **kwargs)
        self.addCleanup(f.close)
        return f

    def run_fake(self, f):
        proc = f.run_runner()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc

    def test_endpoint_calls(self):
        f = self.fake(info("predict", "ENDPOINT", concurrency=2), [
            http_task("t_ok", envelope(body=b'{"k": "v"}')),
            http_task("t_bad", envelope(body=b"<xml/>")),
            dict(task("t_pickled", args_payload([1, 2, 3])), source="CALL"),
        ])
        self.run_fake(f)
        r = response_of(f.done["t_ok"])
        self.assertEqual((r.status, r.header("content-type"), r.json()),
                         (200, "application/json", {"got": {"k": "v"}, "n": 1}))
        r = response_of(f.done["t_bad"])
        self.assertEqual(r.status, 400)
        self.assertNotIn("failure", f.done["t_bad"])
        self.assertEqual(pickle.loads(base64.b64decode(f.done["t_pickled"]["result"]["data"])),
                         {"got": [1, 2, 3], "n": 3})

    def test_failure_and_async(self):
        f = self.fake(info("broken", "ENDPOINT"), [http_task("t_1", envelope(body=b'"cheese"'))])
        self.run_fake(f)
        fail = f.done["t_1"]["failure"]
        self.assertEqual((fail["kind"], fail["message"]), ("exception", "ValueError: no cheese"))
        self.assertIn('raise ValueError("no %s" % item)', fail["traceback"])
        self.assertNotIn("httpcall.py", fail["traceback"])
        self.assertNotIn("runner.py", fail["traceback"])
        f = self.fake(info("abroken", "ENDPOINT"), [http_task("t_a", envelope(body=b'"tea"'))])
        self.run_fake(f)
        fail = f.done["t_a"]["failure"]
        self.assertEqual(fail["message"], "ValueError: async no tea")
        self.assertTrue(fail["traceback"].splitlines()[1].strip().endswith("in abroken"), fail["traceback"])
        f = self.fake(info("apredict", "ENDPOINT"), [http_task("t_2", envelope(body=b"7")),
                                                      task("t_3", args_payload(8))])
        self.run_fake(f)
        self.assertEqual(response_of(f.done["t_2"]).json(), {"async": 7})
        self.assertEqual(pickle.loads(base64.b64decode(f.done["t_3"]["result"]["data"])), {"async": 8})

    def test_job_queue_and_cron(self):
        f = self.fake(info("add", "FUNCTION"), [http_task("t_job", envelope(body=b'{"args": [2, 3]}'))])
        self.run_fake(f)
        self.assertEqual(response_of(f.done["t_job"]).json(), 5)
        f = self.fake(info("predict", "TASK_QUEUE"), [http_task("t_q", envelope(body=b'"abc"')),
                                                      dict(task("t_put", args_payload("ab")), source="QUEUE")])
        self.run_fake(f)
        self.assertEqual(response_of(f.done["t_q"]).json(), {"got": "abc", "n": 3})
        self.assertEqual(pickle.loads(base64.b64decode(f.done["t_put"]["result"]["data"])), {"got": "ab", "n": 2})
        f = self.fake(info("tick", "CRON"), [dict(task("t_cron", {"data": ""}), source="CRON")])
        self.run_fake(f)
        self.assertEqual(pickle.loads(base64.b64decode(f.done["t_cron"]["result"]["data"])), "ticked")

    def test_asgi_blob_envelopes_and_refusals(self):
        req = envelope("GET", "/big", body=b"x" * (payload.INLINE_LIMIT + 10), root_path="/endpoint/web")
        data = req.to_json()
        import hashlib
        digest = hashlib.sha256(data).hexdigest()
        f = self.fake(info("web", "ASGI"), [dict(task("t_big", {"blob": digest}), source="HTTP"),
                                            task("t_call", args_payload())])
        f.blobs[digest] = data
        proc = self.run_fake(f)
        r = response_of(f.done["t_big"])
        self.assertEqual((r.status, r.headers, r.body), (201, [("x-path", "/big")], b"/endpoint/web"))
        self.assertIn("answers HTTP requests only", f.done["t_call"]["failure"]["message"])
        self.assertIn("does not speak lifespan", proc.stdout)
        self.assertIn("ASGI function web", proc.stdout)


if __name__ == "__main__":
    unittest.main()

"""The runner's ASGI host against an ASGI 3 app written in plain Python (a
tiny router, as FastAPI or Starlette would route): path parameters, query,
JSON bodies, streamed bodies, lifespan and its state, and broken apps."""

import json
import re
import unittest
import urllib.parse

from levers9 import asgi, httpcall


class TinyApp:
    """Routes "/items/{id}" style paths; speaks lifespan."""

    def __init__(self, lifespan=True, fail_startup=False):
        self.lifespan = lifespan
        self.fail_startup = fail_startup
        self.events = []
        self.scopes = []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            if not self.lifespan:
                raise ValueError("unsupported scope type lifespan")
            while True:
                msg = await receive()
                self.events.append(msg["type"])
                if msg["type"] == "lifespan.startup":
                    if self.fail_startup:
                        await send({"type": "lifespan.startup.failed", "message": "no database"})
                        return
                    scope["state"]["db"] = "connected"
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.scopes.append(scope)
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        path = scope["path"]
        m = re.fullmatch(r"/items/([^/]+)", path)
        if m and scope["method"] == "GET":
            q = dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
            return await self.json(send, 200, {"id": m.group(1), "q": q, "state": scope["state"].get("db")})
        if path == "/items" and scope["method"] == "POST":
            item = json.loads(body)
            return await self.json(send, 201, {"created": item, "root": scope["root_path"]})
        if path == "/stream":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/plain"), (b"x-a", b"1"), (b"x-a", b"2")]})
            for i in range(3):
                await send({"type": "http.response.body", "body": b"chunk%d;" % i, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            # A server tells the app the client left once the response is out.
            self.events.append((await receive())["type"])
            return
        if path == "/boom":
            raise KeyError("boom")
        if path == "/after":
            await self.json(send, 200, {"ok": True})
            raise RuntimeError("after the response")
        if path == "/nothing":
            return
        return await self.json(send, 404, {"detail": "Not Found", "path": path})

    async def json(self, send, status, doc):
        data = json.dumps(doc).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


def req(method="GET", path="/", query="", body=b"", headers=(), root_path="/endpoint/web"):
    return httpcall.Request(method, path, query, list(headers), body, root_path=root_path)


class ASGITest(unittest.TestCase):
    def host(self, app):
        logs = []
        h = asgi.Host(app, logs.append)
        self.addCleanup(h.shutdown)
        return h, logs

    def test_routes_query_body_and_scope(self):
        app = TinyApp()
        h, _ = self.host(app)
        r = h.handle(req("GET", "/items/42", "q=a%20b&n=1", headers=[("X-Token", "t")]))
        self.assertEqual((r.status, r.json()), (200, {"id": "42", "q": {"q": "a b", "n": "1"}, "state": "connected"}))
        self.assertEqual(r.header("content-type"), "application/json")
        s = app.scopes[-1]
        self.assertEqual((s["type"], s["asgi"]["version"], s["http_version"], s["scheme"]), ("http", "3.0", "1.1", "http"))
        self.assertEqual((s["root_path"], s["raw_path"], s["query_string"]), ("/endpoint/web", b"/items/42", b"q=a%20b&n=1"))
        self.assertEqual(s["headers"], [(b"x-token", b"t")])
        self.assertIsNone(s["client"])
        r = h.handle(req("POST", "/items", body=json.dumps({"name": "x"}).encode(),
                         headers=[("content-type", "application/json")]))
        self.assertEqual((r.status, r.json()), (201, {"created": {"name": "x"}, "root": "/endpoint/web"}))
        r = h.handle(req("GET", "/items/a%20b"))
        self.assertEqual(r.json()["id"], "a b")  # path is decoded, raw_path is not
        self.assertEqual(app.scopes[-1]["raw_path"], b"/items/a%20b")
        self.assertEqual(h.handle(req("GET", "/nope")).status, 404)

    def test_streamed_body_is_collected(self):
        app = TinyApp()
        h, _ = self.host(app)
        r = h.handle(req("GET", "/stream"))
        self.assertEqual((r.status, r.body), (200, b"chunk0;chunk1;chunk2;"))
        self.assertEqual(r.headers, [("content-type", "text/plain"), ("x-a", "1"), ("x-a", "2")])
        self.assertIn("http.disconnect", app.events)
        # The envelope carries it whole.
        back = httpcall.Response.from_json(r.to_json())
        self.assertEqual(back.body, b"chunk0;chunk1;chunk2;")

    def test_lifespan_once_then_shutdown(self):
        app = TinyApp()
        h = asgi.Host(app, lambda s: None)
        for _ in range(3):
            self.assertEqual(h.handle(req("GET", "/items/1")).json()["state"], "connected")
        self.assertEqual(app.events, ["lifespan.startup"])
        app.scopes[0]["state"]["db"] = "changed"  # each request has a copy of the state
        self.assertEqual(h.handle(req("GET", "/items/1")).json()["state"], "connected")
        h.shutdown()
        self.assertEqual(app.events, ["lifespan.startup", "lifespan.shutdown"])

    def test_without_lifespan(self):
        app = TinyApp(lifespan=False)
        h, logs = self.host(app)
        r = h.handle(req("GET", "/items/7"))
        self.assertEqual(r.json(), {"id": "7", "q": {}, "state": None})
        self.assertTrue(any("does not speak lifespan" in line for line in logs), logs)

    def test_lifespan_failure_fails_every_request(self):
        h, _ = self.host(TinyApp(fail_startup=True))
        for _ in range(2):
            with self.assertRaisesRegex(asgi.LifespanFailed, "startup failed: no database"):
                h.handle(req("GET", "/items/1"))

    def test_broken_apps(self):
        h, logs = self.host(TinyApp())
        with self.assertRaises(KeyError):
            h.handle(req("GET", "/boom"))
        with self.assertRaisesRegex(RuntimeError, "without sending a response"):
            h.handle(req("GET", "/nothing"))
        # Raising once the response went out whole: the response stands.
        r = h.handle(req("GET", "/after"))
        self.assertEqual(r.json(), {"ok": True})
        self.assertTrue(any("after its response" in line for line in logs), logs)
        with self.assertRaisesRegex(TypeError, "not an ASGI application"):
            asgi.Host(None)

    def test_protocol_misuse(self):
        async def body_first(scope, receive, send):
            if scope["type"] == "http":
                await send({"type": "http.response.body", "body": b"x"})

        async def twice(scope, receive, send):
            if scope["type"] == "http":
                await send({"type": "http.response.start", "status": 200})
                await send({"type": "http.response.start", "status": 200})

        for app, msg in ((body_first, "before http.response.start"), (twice, "sent twice")):
            h, _ = self.host(app)
            with self.assertRaisesRegex(RuntimeError, msg):
                h.handle(req())


if __name__ == "__main__":
    unittest.main()

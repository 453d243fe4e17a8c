"""A server whose database is down answers 503 UNAVAILABLE with
Retry-After: the SDK waits as asked and tries safe requests again, for up
to a minute, without a server (a local one plays it)."""

import http.server
import json
import threading
import time
import unittest

import levers9

DOWN = json.dumps({"errors": [{"message": "the database cannot be reached now; try again shortly",
                               "extensions": {"code": "UNAVAILABLE", "retryAfter": 1}}], "data": None}).encode()
UP = json.dumps({"data": {"viewer": {"user": {"email": "a@b.test"}},
                          "submitJob": {"id": "job_1", "name": "", "status": "PENDING", "services": []}}}).encode()


class Outage:
    """A server that answers its first len(retry_after) requests 503 with
    that Retry-After (None: no header), or every request when always;
    then 200. It records each request's arrival and body."""

    def __init__(self, retry_after, always=False):
        self.retry_after = list(retry_after)
        self.always = always
        self.seen = []
        self.lock = threading.Lock()
        outage = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self._answer(b"")

            def do_POST(self):
                self._answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _answer(self, body):
                with outage.lock:
                    n = len(outage.seen)
                    outage.seen.append((time.monotonic(), body))
                down = outage.always or n < len(outage.retry_after)
                self.send_response(503 if down else 200)
                if down:
                    ra = outage.retry_after[min(n, len(outage.retry_after) - 1)]
                    if ra is not None:
                        self.send_header("Retry-After", ra)
                answer = DOWN if down else UP
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def requests(self):
        with self.lock:
            return list(self.seen)


class UnavailableTest(unittest.TestCase):
    def outage(self, retry_after, always=False, retries=1):
        o = Outage(retry_after, always)
        self.addCleanup(o.close)
        client = levers9.Client(server=o.url, token="lv9_test", retries=retries)
        self.addCleanup(client.close)
        return o, client

    def test_query_waits_as_asked_beyond_its_retries(self):
        # Two 503s with Retry-After and retries=1: the server said when to
        # come back, so the window bounds the retries, not their number.
        o, client = self.outage(["1", "1"], retries=1)
        self.assertEqual(client.graphql("{ viewer { user { email } } }")["viewer"]["user"]["email"], "a@b.test")
        seen = o.requests()
        self.assertEqual(len(seen), 3)
        self.assertGreaterEqual(seen[1][0] - seen[0][0], 1.0)

    def test_mutation_is_not_retried(self):
        o, client = self.outage(["1"])
        with self.assertRaises(levers9.Unavailable) as cm:
            client.graphql('mutation { createGroup(input: {name: "g"}) { id } }')
        self.assertEqual((cm.exception.code, cm.exception.status), ("UNAVAILABLE", 503))
        self.assertEqual(cm.exception.details.get("retryAfter"), 1)
        self.assertEqual(len(o.requests()), 1)

    def test_submit_job_is_retried_with_its_idempotency_key(self):
        o, client = self.outage([None])
        job = client.submit_job(["true"], queue="q")
        self.assertEqual(job.id, "job_1")
        keys = [json.loads(body)["variables"]["k"] for _, body in o.requests()]
        self.assertEqual(len(keys), 2)
        self.assertTrue(keys[0])
        self.assertEqual(keys[0], keys[1])

    def test_retries_end_with_the_window(self):
        o, client = self.outage(["1"], always=True, retries=4)
        client._http.retry_window = 1.5
        with self.assertRaises(levers9.Unavailable):
            client.graphql("{ viewer { id } }")
        # Each wait is at least the asked 1 s: a 1.5 s window holds one retry.
        self.assertLessEqual(len(o.requests()), 2)

    def test_downloads_wait_too(self):
        # Streamed requests (files, logs) take the same path out.
        o, client = self.outage(["1"])
        with client._http.request("GET", "/files/anything") as resp:
            self.assertEqual(resp.status, 200)
        self.assertEqual(len(o.requests()), 2)

    def test_retry_after_as_a_date(self):
        from levers9 import transport
        self.assertEqual(transport._retry_after("3"), 3.0)
        self.assertEqual(transport._retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)  # past: now
        self.assertIsNone(transport._retry_after("soon"))
        self.assertIsNone(transport._retry_after(None))


if __name__ == "__main__":
    unittest.main()

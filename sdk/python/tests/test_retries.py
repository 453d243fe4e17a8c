import socket
import threading
import unittest
import urllib.parse

import levers9
from tests import support


class AnswerDroppingProxy:
    """A proxy that passes each of its first `drops` requests to the server
    but never returns the answer (it closes the connection instead): the
    server did the work, the client cannot know. Later connections pass."""

    def __init__(self, target: str, drops: int):
        u = urllib.parse.urlparse(target)
        self.target = (u.hostname, u.port)
        self.drops = drops
        self.dropped = 0
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn, socket.create_connection(self.target) as up:
            request = self._read_request(conn)
            up.sendall(request)
            with self.lock:
                drop = self.dropped < self.drops
                if drop:
                    self.dropped += 1
            answer = b""
            while True:  # the server answers and closes (the client sent Connection: close)
                data = up.recv(65536)
                if not data:
                    break
                answer += data
            if not drop:
                conn.sendall(answer)

    @staticmethod
    def _read_request(conn) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines, length = head.split(b"\r\n"), 0
        kept = [lines[0]]
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
            if name.strip().lower() != b"connection":
                kept.append(line)
        # One request per connection: the server closes after answering,
        # and tells the client so.
        kept.append(b"Connection: close")
        while len(body) < length:
            body += conn.recv(65536)
        return b"\r\n".join(kept) + b"\r\n\r\n" + body


class RetriesTest(unittest.TestCase):
    """A lost answer is retried only where running the request twice is
    harmless."""

    @classmethod
    def setUpClass(cls):
        cls.client = support.admin_client()

    def via_proxy(self, drops):
        proxy = AnswerDroppingProxy(self.client.server, drops)
        self.addCleanup(proxy.close)
        return proxy, levers9.Client(server=proxy.url, token=self.client._http.token)

    def test_query_is_retried(self):
        proxy, client = self.via_proxy(drops=2)
        email = client.graphql("{ viewer { user { email } } }")["viewer"]["user"]["email"]
        self.assertEqual(email, "admin@levers9.local")
        self.assertEqual(proxy.dropped, 2)

    def test_submit_job_is_retried_without_a_second_job(self):
        queue = support.create_queue(self.client)
        proxy, client = self.via_proxy(drops=1)
        job = client.submit_job(["true"], queue=queue)
        self.assertEqual(proxy.dropped, 1)
        self.assertEqual([j.id for j in self.client.jobs(queue=queue)], [job.id])

    def test_other_mutations_are_not_retried(self):
        name = support.unique("g")
        proxy, client = self.via_proxy(drops=1)
        with self.assertRaises(levers9.NetworkError):
            client.graphql("mutation($n: String!) { createGroup(input: {name: $n}) { id } }", {"n": name})
        # The server did create it: a blind retry would have tried twice.
        found = self.client.graphql("query($n: String!) { groups(where: {name: $n}) { totalCount } }", {"n": name})
        self.assertEqual(found["groups"]["totalCount"], 1)

    def test_cancel_is_not_retried(self):
        # cancelJob is not idempotent: a second call refuses an ended job.
        job = self.client.submit_job(["true"], queue=support.create_queue(self.client))
        proxy, client = self.via_proxy(drops=1)
        with self.assertRaises(levers9.NetworkError):
            levers9.Job(client, {"id": job.id}).cancel()
        self.assertEqual(proxy.dropped, 1)
        self.assertEqual(job.refresh().status, "CANCELLED")


if __name__ == "__main__":
    unittest.main()

import socket
import threading
import unittest
import urllib.parse

import levers9
from tests import support


class CuttingProxy:
    """A TCP proxy to the server that cuts each of its first `cuts`
    connections once `limit` bytes of the answer went through: a network
    dropping a log stream mid-way (mid-line, too)."""

    def __init__(self, target: str, limit: int, cuts: int):
        u = urllib.parse.urlparse(target)
        self.target = (u.hostname, u.port)
        self.limit, self.cuts = limit, cuts
        self.cut = 0  # connections cut so far
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        upstream = socket.create_connection(self.target)
        threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()
        self._pump(upstream, client, self.limit)

    def _pump(self, src, dst, limit):
        sent = 0
        stream = None  # decided by the answer's first bytes
        try:
            while True:
                data = src.recv(4096)
                if not data:
                    break
                if stream is None:
                    # Only event streams are cut; other answers (and the
                    # kept-alive connections that carry them) pass whole.
                    stream = b"text/event-stream" in data
                if limit is not None and stream:
                    with self.lock:
                        cut = self.cut < self.cuts
                    if cut and sent + len(data) >= limit:
                        dst.sendall(data[:limit - sent])
                        with self.lock:
                            self.cut += 1
                        break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


class ResumeTest(unittest.TestCase):
    def test_logs_resume_without_loss_after_cuts(self):
        client = support.admin_client()
        n = 400
        job = client.submit_job(["sh", "-c", "i=1; while [ $i -le %d ]; do echo \"line $i of the log\"; i=$((i+1)); done" % n])
        job.wait(timeout=120)  # every line stored: the stream replays them, then completes
        proxy = CuttingProxy(client.server, limit=3000, cuts=3)
        self.addCleanup(proxy.close)
        token = client._http.token
        via_proxy = levers9.Client(server=proxy.url, token=token)
        lines = list(via_proxy.job(job.id).logs(follow=True))
        self.assertEqual(proxy.cut, 3, "the proxy cut fewer streams than planned: the test proves nothing")
        self.assertEqual([l.seq for l in lines], list(range(1, n + 1)))
        self.assertEqual([l.text for l in lines], ["line %d of the log" % i for i in range(1, n + 1)])

    def test_logs_resume_while_the_job_runs(self):
        client = support.admin_client()
        proxy = CuttingProxy(client.server, limit=1500, cuts=2)
        self.addCleanup(proxy.close)
        via_proxy = levers9.Client(server=proxy.url, token=client._http.token)
        n = 60
        job = via_proxy.submit_job(["sh", "-c", "i=1; while [ $i -le %d ]; do echo \"tick $i\"; sleep 0.02; i=$((i+1)); done" % n])
        texts = [l.text for l in job.logs(follow=True)]
        self.assertEqual(proxy.cut, 2)
        self.assertEqual(texts, ["tick %d" % i for i in range(1, n + 1)])
        self.assertEqual(job.wait(timeout=120).exit_code, 0)


if __name__ == "__main__":
    unittest.main()

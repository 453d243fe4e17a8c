"""SDK benchmark, run by the Go benchmark BenchmarkPythonSDK (make bench).

Against LEVERS9_SERVER/LEVERS9_TOKEN (a tenant admin), prints one JSON
object:
  submit_per_s: sequential Client.submit_job calls per second (to a queue
      without nodes, so only submission is measured);
  first_line_ms: p50/p99 of the time from calling submit_job to the first
      log line of `echo hi` arriving through job.logs(follow=True) on the
      built-in local node.
"""

import json
import sys
import time

sys.path.insert(0, ".")

import levers9  # noqa: E402
from tests import support  # noqa: E402


def pct(xs, p):
    s = sorted(xs)
    return s[(len(s) - 1) * p // 100]


def main(submits: int, follows: int) -> None:
    client = levers9.Client()
    parked = support.create_queue(client)
    for _ in range(20):  # warm up connections and caches
        client.submit_job(["true"], queue=parked)
    start = time.perf_counter()
    for _ in range(submits):
        client.submit_job(["true"], queue=parked)
    rate = submits / (time.perf_counter() - start)

    firsts = []
    for i in range(follows + 3):
        t0 = time.perf_counter()
        job = client.submit_job(["echo", "hi"])
        line = next(iter(job.logs(follow=True)))
        dt = (time.perf_counter() - t0) * 1000
        if line.text != "hi":
            raise SystemExit("first line %r, want 'hi'" % line.text)
        if i >= 3:
            firsts.append(dt)
        job.wait(timeout=60)
    print(json.dumps({"submit_per_s": rate, "first_line_ms_p50": pct(firsts, 50), "first_line_ms_p99": pct(firsts, 99)}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500, int(sys.argv[2]) if len(sys.argv) > 2 else 50)

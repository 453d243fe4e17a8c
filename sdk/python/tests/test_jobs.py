import decimal
import unittest

import levers9
from tests import support


class JobsTest(unittest.TestCase):
    """Jobs on the server's built-in local node, end to end."""

    @classmethod
    def setUpClass(cls):
        cls.client = support.admin_client()

    def test_submit_follow_logs_and_exit_code(self):
        job = self.client.submit_job(["sh", "-c", "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; exit 3"],
                                     name="sdk-follow")
        self.assertTrue(job.id.startswith("job_"))
        lines = list(job.logs(follow=True))
        self.assertEqual([(l.seq, l.stream, l.text) for l in lines],
                         [(1, "stdout", "one"), (2, "stderr", "two"), (3, "stdout", "three")])
        self.assertEqual(str(lines[0]), "one")
        job.wait(timeout=120)
        self.assertEqual(job.status, "ERROR")
        self.assertEqual(job.exit_code, 3)
        # Stored lines, from any line on.
        self.assertEqual([l.text for l in job.logs(from_seq=2)], ["two", "three"])

    def test_complete_job_exits_zero(self):
        job = self.client.submit_job(["true"]).wait(timeout=120)
        self.assertEqual((job.status, job.exit_code), ("COMPLETE", 0))
        self.assertEqual(self.client.job(job.id).status, "COMPLETE")

    def test_cancel_and_refresh(self):
        job = self.client.submit_job(["sleep", "600"])
        job.cancel()
        self.assertEqual(job.status, "CANCELLED")
        self.assertEqual(job.refresh().status, "CANCELLED")
        # Killed by the cancel (SIGTERM: 143) when it had started, no code when not.
        self.assertIn(job.exit_code, (None, 143))
        self.assertTrue(job.ended)

    def test_idempotency_key_returns_the_first_job(self):
        queue = support.create_queue(self.client)
        key = support.unique("key")
        first = self.client.submit_job(["true"], queue=queue, idempotency_key=key)
        again = self.client.submit_job(["true"], queue=queue, idempotency_key=key)
        self.assertEqual(first.id, again.id)
        self.assertEqual(len(list(self.client.jobs(queue=queue))), 1)

    def test_multi_service_job_with_resources(self):
        job = self.client.submit_job(services=[
            {"name": "a", "command": ["echo", "from a"], "cpu": 0.5, "memoryMiB": 64},
            {"name": "b", "command": ["echo", "from b"], "cpu": 0.5, "memoryMiB": 64},
        ])
        texts = sorted((l.service, l.text) for l in job.logs(follow=True))
        self.assertEqual(texts, [("a", "from a"), ("b", "from b")])
        self.assertEqual(job.wait(timeout=120).exit_code, 0)

    def test_python_style_arguments_reach_the_server(self):
        job = self.client.submit_job(["sh", "-c", "echo $GREETING"], env={"GREETING": "hello"}, cpu=0.5,
                                     memory_mib=64, timeout_seconds=120, retries=1, priority=3)
        self.assertEqual([l.text for l in job.logs(follow=True)], ["hello"])
        self.assertEqual(job.wait(timeout=120).exit_code, 0)
        stored = self.client.graphql("query($id: ID!) { node(id: $id) { ... on Job { timeoutSeconds retries priority"
                                     " services { cpu memoryMib } } } }", {"id": job.id})["node"]
        self.assertEqual(stored, {"timeoutSeconds": 120, "retries": 1, "priority": 3,
                                  "services": [{"cpu": decimal.Decimal("0.5"), "memoryMib": 64}]})
        # A misspelt argument is refused here, naming itself, and submits nothing.
        queue = support.create_queue(self.client)
        with self.assertRaises(TypeError) as cm:
            self.client.submit_job(["true"], queue=queue, timeout=60)
        self.assertIn("'timeout'; did you mean 'timeout_seconds'?", str(cm.exception))
        self.assertEqual(list(self.client.jobs(queue=queue)), [])

    def test_wait_times_out(self):
        queue = support.create_queue(self.client)
        job = self.client.submit_job(["true"], queue=queue)  # no node: stays PENDING
        with self.assertRaises(TimeoutError):
            job.wait(timeout=0.3)
        self.assertEqual(job.status, "PENDING")


class PagingTest(unittest.TestCase):
    def test_iterates_250_jobs_across_pages(self):
        client = support.admin_client()
        queue = support.create_queue(client)
        submitted = {client.submit_job(["true"], queue=queue, name="page-%d" % i).id for i in range(250)}
        seen = [j.id for j in client.jobs(queue=queue, page_size=40)]
        self.assertEqual(len(seen), 250)  # 7 pages, no job twice
        self.assertEqual(set(seen), submitted)
        oldest_first = [j.name for j in client.jobs(queue=queue, page_size=100, newest_first=False)]
        self.assertEqual(oldest_first[0], "page-0")
        self.assertEqual(oldest_first[-1], "page-249")
        self.assertEqual(len(list(client.jobs(queue=queue, status="running"))), 0)
        self.assertEqual(len(list(client.jobs(queue=queue, status="PENDING", page_size=1000))), 250)


class MoneyTest(unittest.TestCase):
    def test_estimate_and_balance(self):
        client = support.admin_client()
        queue = support.create_queue(client, cpuPrice=0.5, startFee=2)
        e = client.estimate(["true"], queue=queue, resources={"cpu": 2, "memoryMiB": 64}, minutes=10)
        self.assertEqual((e.start_fee, e.per_minute, e.minutes, e.total), (2, 1, 10, 12))
        me = client.graphql("{ viewer { user { id } } }")["viewer"]["user"]["id"]
        before = client.balance()
        client.graphql('mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 12.25, reason: "sdk test"}) { id } }',
                       {"u": me})
        self.assertEqual(client.balance() - before, decimal.Decimal("12.25"))
        # Decimals go into variables exactly.
        client.graphql('mutation($u: ID!, $t: Tokens!) { grantTokens(input: {userID: $u, tokens: $t, reason: "exact"}) { id } }',
                       {"u": me, "t": decimal.Decimal("0.000001")})
        self.assertEqual(client.balance() - before, decimal.Decimal("12.250001"))


if __name__ == "__main__":
    unittest.main()

import io
import unittest

import levers9
from tests import support


class ErrorsTest(unittest.TestCase):
    """Every error class, raised by what a real server answers."""

    @classmethod
    def setUpClass(cls):
        cls.client = support.admin_client()

    def test_unauthenticated(self):
        bad = levers9.Client(server=self.client.server, token="lv9_wrong")
        with self.assertRaises(levers9.Unauthenticated) as cm:
            bad.graphql("{ viewer { user { email } } }")
        self.assertEqual(cm.exception.code, "UNAUTHENTICATED")
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(levers9.Unauthenticated):  # the files API
            bad.buckets.ls("anything")

    def test_not_found(self):
        with self.assertRaises(levers9.NotFound) as cm:
            self.client.submit_job(["true"], queue="no-such-queue")
        self.assertEqual((cm.exception.code, cm.exception.field), ("NOT_FOUND", "queue"))
        self.assertIn("no-such-queue", str(cm.exception))
        with self.assertRaises(levers9.NotFound):
            self.client.graphql('mutation { cancelJob(id: "job_01m8nonexistent0000000000000") { id } }')
        with self.assertRaises(levers9.NotFound):  # the files API
            self.client.buckets.download("no-such-bucket", "x", io.BytesIO())
        unknown = levers9.Job(self.client, {"id": "job_01m8nonexistent0000000000000"})
        with self.assertRaises(levers9.NotFound):  # inside the event stream
            list(unknown.logs(follow=True))
        with self.assertRaises(levers9.NotFound):
            unknown.refresh()

    def test_bad_input(self):
        with self.assertRaises(levers9.BadInput) as cm:
            self.client.submit_job(services=[{"name": "Not A DNS Label", "command": ["true"]}])
        self.assertEqual(cm.exception.code, "BAD_USER_INPUT")
        self.assertTrue(cm.exception.field.startswith("services"), cm.exception.field)

    def test_forbidden(self):
        member = support.member_client(self.client)
        with self.assertRaises(levers9.Forbidden) as cm:
            member.graphql('mutation { createGroup(input: {name: "not-mine"}) { id } }')
        self.assertEqual(cm.exception.code, "FORBIDDEN")

    def test_insufficient_tokens(self):
        member = support.member_client(self.client)
        queue = support.create_queue(self.client, startFee=5)
        with self.assertRaises(levers9.InsufficientTokens) as cm:
            member.submit_job(["true"], queue=queue)
        self.assertEqual(cm.exception.code, "INSUFFICIENT_TOKENS")
        self.assertEqual(cm.exception.details["required"], "5")
        self.assertIsInstance(cm.exception, levers9.Error)

    def test_network_error_after_retries(self):
        down = levers9.Client(server="http://127.0.0.1:1", token="lv9_x", retries=1)
        with self.assertRaises(levers9.NetworkError):
            down.balance()



class FollowGivesUpTest(unittest.TestCase):
    def test_following_a_server_that_is_down_ends_in_network_error(self):
        down = levers9.Client(server="http://127.0.0.1:1", token="lv9_x", retries=0)
        job = levers9.Job(down, {"id": "job_01m8nonexistent0000000000000"})
        with self.assertRaises(levers9.NetworkError):
            list(job.logs(follow=True, max_reconnects=2))


if __name__ == "__main__":
    unittest.main()

import unittest

import levers9
from tests import support


class SignInTest(unittest.TestCase):
    """Client.sign_in as its docstring and the README show it: a session,
    a lasting API token made with it, the session ended."""

    @classmethod
    def setUpClass(cls):
        cls.admin = support.admin_client()

    def test_session_token_then_sign_out(self):
        email = support.unique("signin") + "@levers9.local"
        password = "a long test password"
        self.admin.graphql("mutation($e: String!, $p: String!) { createUser(input: {email: $e, password: $p, "
                           "role: MEMBER}) { id } }", {"e": email, "p": password})
        with levers9.Client.sign_in(email, password, server=self.admin.server) as session:
            self.assertEqual(session.graphql("{ viewer { user { email } } }")["viewer"]["user"]["email"], email)
            token = session.create_api_token("sdk-test")
            self.assertTrue(session.sign_out())
            with self.assertRaises(levers9.Unauthenticated):  # the session is over
                session.graphql("{ viewer { user { email } } }")
        with levers9.Client(server=self.admin.server, token=token) as client:
            self.assertEqual(client.graphql("{ viewer { user { email } } }")["viewer"]["user"]["email"], email)
            self.assertFalse(client.sign_out())  # an API token is no session: it stays
            client.graphql("{ viewer { user { email } } }")

    def test_wrong_password(self):
        with self.assertRaises(levers9.Unauthenticated):
            levers9.Client.sign_in("admin@levers9.local", "not the password", server=self.admin.server)


if __name__ == "__main__":
    unittest.main()

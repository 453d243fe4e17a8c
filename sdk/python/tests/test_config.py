import json
import os
import tempfile
import unittest
from unittest import mock

import levers9


class ConfigTest(unittest.TestCase):
    """Contexts resolve as in the CLI: arguments, then LEVERS9_SERVER and
    LEVERS9_TOKEN, then the named or current context. No server needed."""

    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.path = os.path.join(d.name, "config")
        self.write({"current": "prod", "contexts": {
            "prod": {"server": "https://prod.example", "token": "lv9_prod", "queue": "gpu", "project": "vision"},
            "dev": {"server": "http://dev.example:8080/", "token": "lv9_dev"},
        }})

    def write(self, cfg, mode=0o600):
        with open(self.path, "w") as f:
            json.dump(cfg, f)
        os.chmod(self.path, mode)

    def env(self, **extra):
        e = {"LEVERS9_CONFIG": self.path}
        e.update(extra)
        return mock.patch.dict(os.environ, e, clear=True)

    def test_resolution_order(self):
        cases = [
            ("current context", {}, {}, ("https://prod.example", "lv9_prod", "gpu", "vision")),
            ("named context", {"context": "dev"}, {}, ("http://dev.example:8080", "lv9_dev", "", "")),
            ("env wins over the file", {}, {"LEVERS9_SERVER": "http://env", "LEVERS9_TOKEN": "lv9_env"},
             ("http://env", "lv9_env", "", "")),
            ("env token, context server", {}, {"LEVERS9_TOKEN": "lv9_env"}, ("https://prod.example", "lv9_env", "gpu", "vision")),
            ("env wins over -c too", {"context": "dev"}, {"LEVERS9_TOKEN": "lv9_env"}, ("http://dev.example:8080", "lv9_env", "", "")),
            ("arguments win", {"server": "http://arg", "token": "lv9_arg"}, {"LEVERS9_TOKEN": "lv9_env"},
             ("http://arg", "lv9_arg", "", "")),
        ]
        for name, kwargs, env, want in cases:
            with self.subTest(name), self.env(**env):
                c = levers9.resolve(**kwargs)
                self.assertEqual((c.server, c.token, c.queue, c.project), want)

    def test_client_uses_context_defaults(self):
        with self.env():
            client = levers9.Client()
        self.assertEqual((client.server, client.default_queue, client.default_project), ("https://prod.example", "gpu", "vision"))

    def test_unknown_context(self):
        with self.env(), self.assertRaises(levers9.ConfigError) as cm:
            levers9.Client(context="nope")
        self.assertIn("nope", str(cm.exception))

    def test_loose_mode_refused(self):
        self.write({"contexts": {}}, mode=0o644)
        with self.env(), self.assertRaises(levers9.ConfigError) as cm:
            levers9.Client()
        self.assertIn("0644", str(cm.exception))
        self.assertIn("chmod 600", str(cm.exception))
        # Both variables set: the file is not read at all.
        with self.env(LEVERS9_SERVER="http://env", LEVERS9_TOKEN="lv9_env"):
            self.assertEqual(levers9.Client().server, "http://env")

    def test_missing_file_and_garbage(self):
        with mock.patch.dict(os.environ, {"LEVERS9_CONFIG": self.path + ".missing"}, clear=True):
            c = levers9.resolve()
        self.assertEqual((c.server, c.token), ("http://127.0.0.1:8080", ""))
        with open(self.path, "w") as f:
            f.write("not json")
        with self.env(), self.assertRaises(levers9.ConfigError):
            levers9.resolve()

    def test_no_token_is_unauthenticated_before_any_request(self):
        with mock.patch.dict(os.environ, {"LEVERS9_CONFIG": self.path + ".missing"}, clear=True):
            client = levers9.Client(server="http://127.0.0.1:1")
        with self.assertRaises(levers9.Unauthenticated) as cm:
            client.balance()
        self.assertIn("levers9 login", str(cm.exception))



class DocstringTest(unittest.TestCase):
    def test_docstring_examples(self):
        import doctest
        import levers9.client
        result = doctest.testmod(levers9.client, verbose=False)
        self.assertGreater(result.attempted, 0)
        self.assertEqual(result.failed, 0)


if __name__ == "__main__":
    unittest.main()

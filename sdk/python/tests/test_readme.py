import contextlib
import io
import os
import re
import unittest

import levers9
from tests import support

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


class ReadmeTest(unittest.TestCase):
    """The README's Python examples, run in order in one namespace, as a
    reader would paste them."""

    def test_examples_run(self):
        client = support.admin_client()
        with open(README) as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertGreaterEqual(len(blocks), 5)
        namespace = {}
        out = io.StringIO()
        for i, block in enumerate(blocks):
            with self.subTest(block=i), contextlib.redirect_stdout(out):
                exec(compile(block, "README.md block %d" % (i + 1), "exec"), namespace)
        printed = out.getvalue()
        self.assertIn("admin@levers9.local", printed)
        self.assertIn("1 stdout hello", printed)
        self.assertIn("2 stderr oops", printed)
        self.assertIn("CANCELLED", printed)
        self.assertIn("[('readme/hello.txt', 6)]", printed)
        self.assertIn("NOT_FOUND queue", printed)
        self.assertIn("submit_job() got an unexpected keyword argument 'gpu_type'; did you mean 'gpu_types'?", printed)
        # The README made its own bucket: its examples work on a fresh server.
        self.assertIn("inputs", [b.name for b in client.buckets.list()])


if __name__ == "__main__":
    unittest.main()

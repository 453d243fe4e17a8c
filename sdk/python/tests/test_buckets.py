import io
import os
import tempfile
import unittest

import levers9
from tests import support


def create_bucket(client: levers9.Client, name: str = "") -> str:
    """A bucket on the tenant's first storage, readable and writable by everyone."""
    storage = client.graphql("{ storages(first: 1) { edges { node { id } } } }")["storages"]["edges"][0]["node"]["id"]
    name = name or support.unique("b")
    group = support.everyone(client)
    client.graphql("mutation($i: CreateBucketInput!) { createBucket(input: $i) { id } }",
                   {"i": {"name": name, "storageID": storage, "readGroupIDs": [group], "writeGroupIDs": [group]}})
    return name


class BucketsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = support.admin_client()
        cls.bucket = create_bucket(cls.client)

    def test_upload_ls_download_rm(self):
        b = self.client.buckets
        data = os.urandom(3 << 20) + b"end"  # several chunks each way
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "model.bin")
            with open(src, "wb") as f:
                f.write(data)
            self.assertEqual(b.upload(self.bucket, "runs/1/", src), len(data))  # "/" takes the file's name
            self.assertEqual(b.upload(self.bucket, "runs/1/notes.txt", io.BytesIO(b"hello")), 5)
            self.assertEqual(b.upload(self.bucket, "other.txt", io.BytesIO(b"x")), 1)

            listed = b.ls(self.bucket, "runs/")
            self.assertEqual([(o.key, o.size) for o in listed], [("runs/1/model.bin", len(data)), ("runs/1/notes.txt", 5)])
            self.assertEqual(len(b.ls(self.bucket)), 3)

            dst = os.path.join(d, "copy.bin")
            self.assertEqual(b.download(self.bucket, "runs/1/model.bin", dst), len(data))
            with open(dst, "rb") as f:
                self.assertEqual(f.read(), data)
            b.download(self.bucket, "runs/1/notes.txt", d)  # into a directory
            with open(os.path.join(d, "notes.txt"), "rb") as f:
                self.assertEqual(f.read(), b"hello")
            buf = io.BytesIO()
            b.download(self.bucket, "other.txt", buf)
            self.assertEqual(buf.getvalue(), b"x")

            b.rm(self.bucket, "runs/1/model.bin")
            self.assertEqual([o.key for o in b.ls(self.bucket, "runs/")], ["runs/1/notes.txt"])
            with self.assertRaises(levers9.NotFound):
                b.download(self.bucket, "runs/1/model.bin", os.path.join(d, "gone.bin"))
            self.assertFalse(os.path.exists(os.path.join(d, "gone.bin")))
            self.assertEqual([n for n in os.listdir(d) if n.startswith(".levers9-")], [], "temporary files left")

    def test_keys_leaving_the_bucket_are_refused(self):
        with self.assertRaises(levers9.BadInput):
            self.client.buckets.upload(self.bucket, "a/../../etc/passwd", io.BytesIO(b"x"))


if __name__ == "__main__":
    unittest.main()

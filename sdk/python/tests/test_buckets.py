import io
import os
import pathlib
import tempfile
import threading
import unittest

import levers9
from tests import support


def create_bucket(client: levers9.Client, name: str = "") -> str:
    """A bucket on the tenant's only storage, readable and writable by everyone."""
    name = name or support.unique("b")
    client.buckets.create(name, read_groups=["everyone"], write_groups=["everyone"])
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

    def test_upload_bytes_and_streams(self):
        b = self.client.buckets
        bucket = create_bucket(self.client)
        self.assertEqual(b.upload(bucket, "bytes.bin", b"\x00raw"), 4)
        self.assertEqual(b.upload(bucket, "view.bin", memoryview(b"abc")[1:]), 2)
        # A pipe: not seekable, sent chunked as it is read (never whole).
        r, w = os.pipe()
        data = os.urandom(3 << 20)

        def feed():
            with os.fdopen(w, "wb") as f:
                f.write(data)

        writer = threading.Thread(target=feed)
        writer.start()
        with os.fdopen(r, "rb") as f:
            self.assertEqual(b.upload(bucket, "piped.bin", f), len(data))
        writer.join()
        with tempfile.TemporaryDirectory() as d:
            src = pathlib.Path(d) / "path.txt"
            src.write_bytes(b"from a pathlib path")
            self.assertEqual(b.upload(bucket, "p/", src), 19)
        got = {o.key: o.size for o in b.ls(bucket)}
        self.assertEqual((got["bytes.bin"], got["view.bin"], got["piped.bin"], got["p/path.txt"]), (4, 2, len(data), 19))
        buf = io.BytesIO()
        b.download(bucket, "piped.bin", buf)
        self.assertEqual(buf.getvalue(), data)

    def test_keys_leaving_the_bucket_are_refused(self):
        with self.assertRaises(levers9.BadInput):
            self.client.buckets.upload(self.bucket, "a/../../etc/passwd", io.BytesIO(b"x"))


class BucketAdminTest(unittest.TestCase):
    """Buckets themselves: created, listed and deleted from Python."""

    @classmethod
    def setUpClass(cls):
        cls.client = support.admin_client()

    def test_create_list_delete(self):
        b = self.client.buckets
        name = support.unique("made")
        made = b.create(name, read_groups=["everyone"], write_groups=[support.everyone(self.client)])
        self.assertEqual((made.name, made.storage, made.size_bytes, made.project), (name, "local", 0, None))
        self.assertTrue(made.id.startswith("bkt_"))
        listed = {x.name: x for x in b.list()}
        # All but created_at: PostgreSQL keeps microseconds, the answer to
        # the create had nanoseconds.
        self.assertEqual(listed[name].id, made.id)
        self.assertEqual(listed[name].created_at[:19], made.created_at[:19])
        self.assertEqual((listed[name].storage, listed[name].size_bytes, listed[name].project), ("local", 0, None))
        names = [x.name for x in b.list()]
        self.assertEqual(names, sorted(names))
        # The groups given reach members: one uploads and reads.
        member = support.member_client(self.client)
        member.buckets.upload(name, "hi.txt", b"hi")
        self.assertEqual([o.key for o in member.buckets.ls(name)], ["hi.txt"])
        self.assertIn(name, [x.name for x in member.buckets.list()])
        with self.assertRaises(levers9.Forbidden):  # creating and deleting is for admins
            member.buckets.create(support.unique("mine"))
        with self.assertRaises(levers9.Forbidden):
            member.buckets.delete(name)
        member.buckets.rm(name, "hi.txt")
        b.delete(name)
        self.assertNotIn(name, [x.name for x in b.list()])
        with self.assertRaises(levers9.NotFound):
            b.delete(name)

    def test_refusals_name_what_is_wrong_and_create_nothing(self):
        b = self.client.buckets
        before = [x.name for x in b.list()]
        cases = [
            (dict(storage="no-such-storage"), levers9.NotFound, "no-such-storage"),
            (dict(read_groups=["everyone", "no-such-group"]), levers9.NotFound, "no-such-group"),
            (dict(project="no-such-project"), levers9.NotFound, "no-such-project"),
        ]
        for kwargs, error, named in cases:
            with self.subTest(kwargs=kwargs), self.assertRaises(error) as cm:
                b.create(support.unique("bad"), **kwargs)
            self.assertIn(named, str(cm.exception))
        with self.assertRaises(levers9.BadInput) as cm:
            b.create("Not A Bucket Name")
        self.assertEqual(cm.exception.field, "name")
        self.assertEqual([x.name for x in b.list()], before)

    def test_several_storages_need_a_choice(self):
        storage = support.unique("st")
        sid = self.client.graphql("mutation($i: CreateStorageInput!) { createStorage(input: $i) { id } }",
                                  {"i": {"name": storage, "kind": "LOCAL"}})["createStorage"]["id"]
        self.addCleanup(self.client.graphql, "mutation($id: ID!) { deleteStorage(id: $id) }", {"id": sid})
        with self.assertRaises(levers9.BadInput) as cm:
            self.client.buckets.create(support.unique("which"))
        self.assertIn(storage, str(cm.exception))
        self.assertIn("local", str(cm.exception))
        name = support.unique("there")
        self.assertEqual(self.client.buckets.create(name, storage=storage).storage, storage)
        self.client.buckets.delete(name)


if __name__ == "__main__":
    unittest.main()

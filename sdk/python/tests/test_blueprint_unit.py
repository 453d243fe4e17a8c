"""Blueprints without a server: the steps and their keys, deterministic
zips of local files, immutability, build against a fake GraphQL client,
and blueprint= / @app.box in deploys (the real builds run in the Go
end-to-end tests, e2e/blueprint_docker_test.go)."""

import hashlib
import io
import os
import tempfile
import unittest
import zipfile
from unittest import mock

import levers9
from levers9 import backend as backends
from levers9 import blueprint as bpmod
from levers9 import functions


def handler(x):
    return x


def other(x):
    return x


def serve_box():
    pass


class FakeClient:
    """client.graphql answering from a table keyed by the operation's
    field (an answer may be a list: one per request, the last repeated)."""

    default_queue = "default"
    default_project = ""
    server = "http://h"

    def __init__(self, answers):
        self.answers = answers
        self.requests = []

    def graphql(self, query, variables=None, idempotent=None):
        self.requests.append((query, variables or {}, idempotent))
        for field, answer in self.answers.items():
            if field + "(" in query:
                if isinstance(answer, list):
                    answer = answer.pop(0) if len(answer) > 1 else answer[0]
                return {field: answer(variables) if callable(answer) else answer}
        raise AssertionError("unexpected request: " + query)


def image():
    return (levers9.Blueprint.debian_slim(python="3.12")
            .apt_install("ffmpeg", "git")
            .pip_install("pillow==11.0.0")
            .run_commands("python -c 'import PIL'", "echo <ok> & done")
            .env({"B": "2", "A": "1"})
            .workdir("/app"))


class StepsTest(unittest.TestCase):
    def test_steps_are_step_inputs(self):
        self.assertEqual(image().steps, [
            {"kind": "REGISTRY", "ref": "python:3.12-slim"},
            {"kind": "APT", "packages": ["ffmpeg", "git"]},
            {"kind": "PIP", "packages": ["pillow==11.0.0"]},
            {"kind": "RUN", "commands": ["python -c 'import PIL'", "echo <ok> & done"]},
            {"kind": "ENV", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"kind": "WORKDIR", "path": "/app"},
        ])
        deb = levers9.Blueprint.debootstrap(packages=["python3", "curl"], mirror="http://deb.example/debian")
        self.assertEqual(deb.steps, [{"kind": "DEBOOTSTRAP", "suite": "bookworm", "mirror": "http://deb.example/debian",
                                      "packages": ["python3", "curl"]}])
        self.assertEqual(levers9.Blueprint.from_registry("ubuntu:24.04").steps, [{"kind": "REGISTRY", "ref": "ubuntu:24.04"}])

    def test_same_builder_same_steps_and_keys(self):
        a, b = image(), image()
        self.assertEqual(a.steps, b.steps)
        self.assertEqual(a.keys, b.keys)
        self.assertEqual(a, b)
        self.assertEqual(hash(a), hash(b))
        self.assertEqual(len(set(a.keys)), 6)
        # The keys as the contract defines them (the server's Go computes the same).
        first = '{"kind":"REGISTRY","ref":"python:3.12-slim"}'
        k0 = hashlib.sha256(("levers9-blueprint-v1\n" + first).encode()).hexdigest()
        self.assertEqual(a.keys[0], k0)
        run = '{"kind":"RUN","commands":["python -c \'import PIL\'","echo \\u003cok\\u003e \\u0026 done"]}'
        self.assertEqual(bpmod.canonical_json(a.steps[3]), run)
        self.assertEqual(bpmod.canonical_json(a.steps[4]),
                         '{"kind":"ENV","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}')
        self.assertEqual(a.keys[3], hashlib.sha256((a.keys[2] + "\n" + run).encode()).hexdigest())
        self.assertEqual(a.key, a.keys[-1])

    def test_a_changed_step_changes_its_key_and_later_ones_only(self):
        base = levers9.Blueprint.debian_slim().apt_install("ffmpeg")
        one = base.pip_install("torch==2.5.1").run_commands("true")
        two = base.pip_install("torch==2.5.0").run_commands("true")
        self.assertEqual(one.keys[:2], two.keys[:2])
        self.assertNotEqual(one.keys[2], two.keys[2])
        self.assertNotEqual(one.keys[3], two.keys[3])

    def test_immutable(self):
        base = levers9.Blueprint.debian_slim()
        before = base.steps
        derived = base.apt_install("curl")
        self.assertIsNot(derived, base)
        self.assertEqual(base.steps, before)
        self.assertEqual(len(derived.steps), 2)
        for make in (lambda b: b.pip_install("x"), lambda b: b.run_commands("x"), lambda b: b.env({"A": "1"}),
                     lambda b: b.workdir("/w")):
            self.assertIsNot(make(base), base)
            self.assertEqual(base.steps, before)
        s = derived.steps
        s[1]["packages"].append("evil")
        self.assertEqual(derived.steps[1]["packages"], ["curl"])

    def test_bad_builders(self):
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint().apt_install("x")
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint.debian_slim(python="3.12; rm")
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint.debian_slim().apt_install()
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint.debian_slim().workdir("relative")
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint.debian_slim().env({"A": 1})
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint.debian_slim().add_local_dir("/no/such/dir", "/x")
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint.debian_slim().pip_install_from_requirements("/no/such/requirements.txt")
        with self.assertRaises(levers9.BadInput):
            levers9.Blueprint().build(client=FakeClient({}))

    def test_requirements_content_is_the_step(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "requirements.txt")
            with open(path, "w") as f:
                f.write("numpy==2.1.0\n")
            a = levers9.Blueprint.debian_slim().pip_install_from_requirements(path)
            self.assertEqual(a.steps[1], {"kind": "PIP", "requirements": "numpy==2.1.0\n"})
            with open(path, "w") as f:
                f.write("numpy==2.1.1\n")
            b = levers9.Blueprint.debian_slim().pip_install_from_requirements(path)
            self.assertNotEqual(a.keys[1], b.keys[1])


class LocalFilesTest(unittest.TestCase):
    def tree(self, d):
        os.makedirs(os.path.join(d, "sub"))
        os.makedirs(os.path.join(d, "__pycache__"))
        for name, data in (("b.txt", b"b"), ("a.bin", b"\x00" * 1000), ("sub/run.sh", b"#!/bin/sh\n"),
                           ("__pycache__/x.pyc", b"junk")):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        os.chmod(os.path.join(d, "sub/run.sh"), 0o775)

    def test_zip_is_deterministic_and_follows_content(self):
        with tempfile.TemporaryDirectory() as d:
            self.tree(d)
            a = levers9.Blueprint.debian_slim().add_local_dir(d, "/weights")
            os.utime(os.path.join(d, "b.txt"), (1, 1))
            b = levers9.Blueprint.debian_slim().add_local_dir(d, "/weights")
            self.assertEqual(a.steps, b.steps)
            step = a.steps[1]
            self.assertEqual((step["kind"], step["path"]), ("COPY", "/weights"))
            data = dict(a._blobs)[step["code"]]
            self.assertEqual(hashlib.sha256(data).hexdigest(), step["code"])
            zf = zipfile.ZipFile(io.BytesIO(data))
            self.assertEqual(zf.namelist(), ["a.bin", "b.txt", "sub/run.sh"])
            for info in zf.infolist():
                self.assertEqual(info.date_time, (1980, 1, 1, 0, 0, 0))
            self.assertEqual(zf.getinfo("sub/run.sh").external_attr >> 16 & 0o777, 0o755)
            self.assertEqual(zf.getinfo("b.txt").external_attr >> 16 & 0o777, 0o644)
            with open(os.path.join(d, "b.txt"), "wb") as f:
                f.write(b"B")
            c = levers9.Blueprint.debian_slim().add_local_dir(d, "/weights")
            self.assertNotEqual(c.steps[1]["code"], step["code"])
            self.assertNotEqual(c.key, a.key)

    def test_add_local_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "model.bin")
            with open(path, "wb") as f:
                f.write(b"weights")
            a = levers9.Blueprint.debian_slim().add_local_file(path, "/models/m.bin")
            self.assertEqual(a.steps[1]["path"], "/models")
            zf = zipfile.ZipFile(io.BytesIO(dict(a._blobs)[a.steps[1]["code"]]))
            self.assertEqual(zf.namelist(), ["m.bin"])
            self.assertEqual(zf.read("m.bin"), b"weights")
            b = levers9.Blueprint.debian_slim().add_local_file(path, "/models/")
            zf = zipfile.ZipFile(io.BytesIO(dict(b._blobs)[b.steps[1]["code"]]))
            self.assertEqual((b.steps[1]["path"], zf.namelist()), ("/models", ["model.bin"]))


class BuildTest(unittest.TestCase):
    def setUp(self):
        self.uploads = []
        patcher = mock.patch.object(backends.GraphQLBackend, "upload_code",
                                    lambda be, digest, data: self.uploads.append(digest) or True)
        patcher.start()
        self.addCleanup(patcher.stop)
        patcher = mock.patch.object(backends.GraphQLBackend, "__init__", lambda be, client: None)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_build_uploads_files_polls_until_ready(self):
        building = {"id": "bp_1", "key": "k", "image": "levers9-bp/t:k", "state": "BUILDING", "failure": "",
                    "buildJob": {"id": "job_b", "status": "RUNNING"}}
        client = FakeClient({"buildBlueprint": building,
                             "blueprint": [building, dict(building, state="READY", stepsBuilt=2)]})
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "f"), "w") as f:
                f.write("x")
            bp = levers9.Blueprint.debian_slim().add_local_dir(d, "/data")
        built = bp.build(client=client, queue="build", logs=False, poll=0.001)
        self.assertIs(built, bp)
        self.assertEqual((bp.id, bp.state, bp.image), ("bp_1", "READY", "levers9-bp/t:k"))
        self.assertEqual(self.uploads, [bp.steps[1]["code"]])
        query, variables, idempotent = client.requests[0]
        self.assertIn("buildBlueprint(input: $i)", query)
        self.assertEqual(variables["i"], {"steps": bp.steps, "queue": "build"})
        self.assertTrue(idempotent)
        self.assertEqual([r[1] for r in client.requests[1:]], [{"id": "bp_1"}, {"id": "bp_1"}])
        # Built: not again.
        n = len(client.requests)
        bp.build(client=client)
        self.assertEqual(len(client.requests), n)

    def test_ready_at_once_and_failed(self):
        client = FakeClient({"buildBlueprint": {"id": "bp_2", "key": "k", "state": "READY", "buildJob": None}})
        bp = levers9.Blueprint.debian_slim().build(client=client, logs=False)
        self.assertEqual((bp.id, bp.state, len(client.requests)), ("bp_2", "READY", 1))

        client = FakeClient({"buildBlueprint": {"id": "bp_3", "key": "k", "state": "BUILDING", "buildJob": None},
                             "blueprint": {"id": "bp_3", "key": "k", "state": "FAILED",
                                           "failure": "step 2/2 APT: exit code 100"}})
        with self.assertRaises(levers9.Error) as cm:
            levers9.Blueprint.debian_slim().apt_install("nope").build(client=client, logs=False, poll=0.001)
        self.assertIn("exit code 100", str(cm.exception))

    def test_timeout(self):
        client = FakeClient({"buildBlueprint": {"id": "bp_4", "key": "k", "state": "BUILDING", "buildJob": None},
                             "blueprint": {"id": "bp_4", "key": "k", "state": "BUILDING"}})
        with self.assertRaises(TimeoutError):
            levers9.Blueprint.debian_slim().build(client=client, logs=False, timeout=0.05, poll=0.001)

    def test_build_logs_follow_the_build_job(self):
        building = {"id": "bp_5", "key": "k", "state": "BUILDING", "buildJob": {"id": "job_b"}}
        client = FakeClient({"buildBlueprint": building,
                             "blueprint": [building, building, dict(building, state="READY")]})
        lines = [levers9.LogLine(1, "build", "stdout", "", "step 1/1 REGISTRY python:3.12-slim (building)")]
        with mock.patch.object(levers9.Job, "logs", lambda job, follow: iter(lines)), \
                mock.patch("sys.stderr", new_callable=io.StringIO) as err:
            levers9.Blueprint.debian_slim().build(client=client, poll=0.001)
        self.assertIn("step 1/1 REGISTRY", err.getvalue())

    def test_from_id(self):
        client = FakeClient({"blueprint": {"id": "bp_s", "key": "snap", "image": "levers9-bp/t:snap",
                                           "state": "READY", "source": "SNAPSHOT"}})
        bp = levers9.Blueprint.from_id("bp_s", client=client)
        self.assertEqual((bp.id, bp.key, bp.state, bp.steps), ("bp_s", "snap", "READY", []))
        self.assertIs(bp.build(client=client), bp)
        client = FakeClient({"blueprint": None})
        with self.assertRaises(levers9.NotFound):
            levers9.Blueprint.from_id("bp_x", client=client)


class FunctionsTest(unittest.TestCase):
    def test_blueprint_option_builds_each_distinct_once(self):
        built = []

        def build(bp, client=None, queue=None, project=None, **kw):
            built.append((bp.key, queue))
            bp._set({"id": "bp_%d" % len(built), "state": "READY"})
            return bp

        app = levers9.App("bp")
        img = levers9.Blueprint.debian_slim().pip_install("pillow")
        f1 = app.function(blueprint=img, queue="gpu")(handler)
        f2 = app.endpoint(blueprint=levers9.Blueprint.debian_slim().pip_install("pillow"))(other)
        box = app.box(ports=[8080, 9090], blueprint=img.apt_install("curl"))(serve_box)
        with mock.patch.object(levers9.Blueprint, "build", build):
            functions.build_blueprints(app.functions.values(), FakeClient({}))
        self.assertEqual(built, [(img.key, "gpu"), (img.apt_install("curl").key, "default")])
        self.assertEqual(f1._wire("m")["blueprint"], "bp_1")
        self.assertEqual(f2._wire("m")["blueprint"], "bp_1")
        w = box._wire("m")
        self.assertEqual((w["kind"], w["ports"], w["blueprint"]), ("BOX", [8080, 9090], "bp_2"))
        self.assertNotIn("blueprint", app.function(name="plain")(handler)._wire("m"))

    def test_box_ports_checked(self):
        app = levers9.App("b")
        self.assertEqual(app.box(ports=8080)(serve_box).spec["ports"], [8080])
        for bad in ([], [0], [70000], [80, 80], ["80"], list(range(1, 18)), "8080", None):
            with self.assertRaises(levers9.BadInput, msg=repr(bad)):
                app.box(ports=bad)
        with self.assertRaises(levers9.BadInput):
            app.function(blueprint="python:3.12")
        with self.assertRaises(levers9.BadInput):
            app.function(blueprint=levers9.Blueprint.debian_slim(), image="python:3.12")
        with self.assertRaises(TypeError):
            app.box()


if __name__ == "__main__":
    unittest.main()

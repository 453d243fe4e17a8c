"""The runner in box mode: ready once its ports answer, crashed (non-zero
exit) when its command exits or a port stops answering."""

import json
import os
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from levers9 import runner
from tests.test_functions_unit import SDK, UNIT_APP, FakeRunnerAPI, function_info


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A box function: serves a port in this thread (the runner's).
def serve_forever():
    import http.server
    port = int(os.environ["BOX_TEST_PORT"])
    http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler).serve_forever()


def raises():
    raise RuntimeError("no port for you")


SERVE = ("import os, sys, http.server as h; open(sys.argv[2], 'w').write(str(os.getpid())); "
         "h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()")


def serve_args(port, pidfile):
    """The runner's arguments of a command box serving port, its pid in pidfile."""
    return ["--box-ports", json.dumps([port]), "--box-command", json.dumps([sys.executable, "-c", SERVE, str(port), pidfile])]


class ParseArgsTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(runner.parse_box_args([]), ([], []))
        self.assertEqual(runner.parse_box_args(["--box-ports", "[8000,8001]", "--box-command", '["sh","-c","x"]']),
                         ([8000, 8001], ["sh", "-c", "x"]))
        with self.assertRaises(ValueError):
            runner.parse_box_args(["--box-ports", "nope"])


class RunnerBoxTest(unittest.TestCase):
    def start(self, args, qualname="serve_forever", timeout=30, env=None):
        info = dict(function_info(qualname, module="tests.test_runner_box"), kind="BOX", timeoutSeconds=timeout)
        fake = FakeRunnerAPI(info, [], exit_when_done=False)
        self.addCleanup(fake.close)
        e = dict(os.environ, LEVERS9_RUNNER_SOCKET=fake.path,
                 PYTHONPATH=os.pathsep.join([SDK, UNIT_APP]), PYTHONDONTWRITEBYTECODE="1", **(env or {}))
        proc = subprocess.Popen([sys.executable, "-m", "levers9.runner"] + args, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)

        def stop():
            if proc.poll() is None:
                proc.kill()
            if not proc.stdout.closed:
                proc.communicate()
        self.addCleanup(stop)
        return fake, proc

    def pidfile(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        return os.path.join(d, "pid")

    def wait_claim(self, fake, proc):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None:
            with fake.cond:
                if fake.claims:
                    return fake.claims[0]
            time.sleep(0.05)
        self.fail("no claim: %s" % (proc.communicate(timeout=5)[0] if proc.poll() is not None else "still running"))

    def test_command_box_ready_then_crash_when_the_command_dies(self):
        port, pidfile = free_port(), self.pidfile()
        fake, proc = self.start(serve_args(port, pidfile))
        claim = self.wait_claim(fake, proc)
        self.assertIn("phases", claim)  # ready: the first claim reports the start
        self.assertTrue(runner.port_open(port))
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5) as r:
            self.assertEqual(r.status, 200)
        # The command dies: the runner exits non-zero.
        with open(pidfile) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        self.assertEqual(proc.wait(20), 1)
        self.assertIn("the box command exited", proc.communicate()[0])

    def test_sigterm_stops_the_command(self):
        port = free_port()
        fake, proc = self.start(serve_args(port, self.pidfile()))
        self.wait_claim(fake, proc)
        proc.terminate()
        self.assertNotEqual(proc.wait(20), 0)
        deadline = time.monotonic() + 10
        while runner.port_open(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(runner.port_open(port), "the command outlived its runner")

    def test_function_box(self):
        port = free_port()
        fake, proc = self.start(["--box-ports", "[%d]" % port], env={"BOX_TEST_PORT": str(port)})
        self.wait_claim(fake, proc)
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5) as r:
            self.assertEqual(r.status, 200)

    def test_function_raising_ends_the_box(self):
        port = free_port()
        _, proc = self.start(["--box-ports", "[%d]" % port], qualname="raises")
        self.assertEqual(proc.wait(20), 1)
        self.assertIn("no port for you", proc.communicate()[0])

    def test_a_port_that_never_answers(self):
        port, other = free_port(), free_port()
        args = serve_args(port, self.pidfile())
        args[1] = json.dumps([port, other])
        _, proc = self.start(args, timeout=2)
        self.assertEqual(proc.wait(20), 1)
        self.assertIn("port %d did not accept connections within 2 s" % other, proc.communicate()[0])


class ExitStopsTheBoxTest(unittest.TestCase):
    def test_any_exit_stops_the_command(self):
        """However the runner leaves (a refused claim, an unreachable
        server), the box's command, in its own session, goes first."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        port, pidfile = free_port(), os.path.join(d, "pid")
        codes = []
        r = runner.Runner(os.path.join(d, "none.sock"), log=lambda s: None, exit=codes.append,
                          box_ports=[port], box_command=json.loads(serve_args(port, pidfile)[3]))
        r._start_box(30)
        self.addCleanup(r._stop_box)
        self.assertTrue(runner.port_open(port))
        r._exit(1)
        self.assertEqual(codes[:1], [1])
        self.assertIsNotNone(r.box_proc.poll(), "the command outlived its runner's exit")
        self.assertFalse(runner.port_open(port))

    def test_a_port_that_stops_answering_ends_the_box(self):
        """A ready box whose port refuses connections for BOX_PORT_GRACE
        is a crash: the runner stops its command and exits non-zero."""
        listen_then_close = ("import socket, sys, time; s = socket.socket(); "
                             "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); "
                             "time.sleep(1); s.close(); time.sleep(60)")
        port, codes, lines = free_port(), [], []
        grace, every = runner.BOX_PORT_GRACE, runner.BOX_WATCH_EVERY
        runner.BOX_PORT_GRACE, runner.BOX_WATCH_EVERY = 0.5, 0.1
        self.addCleanup(setattr, runner, "BOX_PORT_GRACE", grace)
        self.addCleanup(setattr, runner, "BOX_WATCH_EVERY", every)
        r = runner.Runner("/nonexistent.sock", log=lines.append, exit=codes.append,
                          box_ports=[port], box_command=[sys.executable, "-c", listen_then_close, str(port)])
        r._start_box(30)
        self.addCleanup(r._stop_box)
        deadline = time.monotonic() + 15
        while not codes and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(codes[:1], [1], lines)
        self.assertTrue(any("port %d refused connections" % port in s for s in lines), lines)
        self.assertIsNotNone(r.box_proc.poll(), "the command outlived the crash")


if __name__ == "__main__":
    unittest.main()

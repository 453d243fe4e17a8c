"""The README's install commands, with no package index: pip installs the
SDK from its folder, and from a wheel built by _levers9_build.py, into a
fresh virtual environment (pip comes from ensurepip, offline).

Not named test_*: it takes a while (two venvs), so the suite's discovery
skips it and e2e's TestPythonSDKInstallsWithoutAnIndex runs it once:
python3 -m unittest tests.install_check
"""

import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args: str, cwd: str) -> str:
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONPATH="")
    env.pop("PIP_INDEX_URL", None)
    env.pop("PIP_EXTRA_INDEX_URL", None)
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    if p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(args), p.returncode, p.stdout))
    return p.stdout


def venv(root: str) -> str:
    """A new virtual environment with pip (from ensurepip: no network)
    and nothing else; returns its python."""
    run(sys.executable, "-m", "venv", os.path.join(root, "venv"), cwd=root)
    return os.path.join(root, "venv", "bin", "python")


class InstallTest(unittest.TestCase):
    def assertInstalled(self, python: str, root: str) -> None:
        # From elsewhere, so the import cannot come from the SDK folder.
        out = run(python, "-c", "import levers9, sys; print(levers9.__file__); print(levers9.__version__);"
                  "c = levers9.Client(server='http://127.0.0.1:1', token='x'); print(c.server)", cwd=root)
        path, version, server = out.split()
        self.assertTrue(path.startswith(os.path.join(root, "venv")), path)
        self.assertEqual(version, _version())
        self.assertEqual(server, "http://127.0.0.1:1")

    def test_pip_install_from_the_folder(self):
        with tempfile.TemporaryDirectory() as root:
            python = venv(root)
            run(python, "-m", "pip", "install", "--no-index", SDK, cwd=root)
            self.assertInstalled(python, root)
            self.assertEqual([n for n in os.listdir(SDK) if n in ("build", "dist") or n.endswith(".egg-info")], [],
                             "the install wrote into the SDK folder")

    def test_wheel_built_offline(self):
        with tempfile.TemporaryDirectory() as root:
            out = run(sys.executable, os.path.join(SDK, "_levers9_build.py"), os.path.join(root, "dist"), cwd=root)
            wheel = out.strip()
            self.assertEqual(os.path.basename(wheel), "levers9-%s-py3-none-any.whl" % _version())
            with zipfile.ZipFile(wheel) as z:
                names = set(z.namelist())
            modules = {"levers9/" + n for n in os.listdir(os.path.join(SDK, "levers9")) if n.endswith(".py")}
            self.assertLessEqual(modules, names)
            self.assertIn("levers9-%s.dist-info/RECORD" % _version(), names)
            # The same bytes every time: a wheel can be checked against another build.
            again = run(sys.executable, os.path.join(SDK, "_levers9_build.py"), os.path.join(root, "again"), cwd=root)
            with open(wheel, "rb") as a, open(again.strip(), "rb") as b:
                self.assertEqual(a.read(), b.read())
            python = venv(root)
            run(python, "-m", "pip", "install", "--no-index", wheel, cwd=root)
            self.assertInstalled(python, root)


def _version() -> str:
    sys.path.insert(0, SDK)
    try:
        import _levers9_build
        return _levers9_build._project()["version"]
    finally:
        sys.path.remove(SDK)


if __name__ == "__main__":
    unittest.main()

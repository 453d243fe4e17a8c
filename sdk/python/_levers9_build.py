"""The SDK's build backend (PEP 517, PEP 660), standard library only.

The package is standard library only, so its build should be too: with
setuptools as the backend, ``pip install ./sdk/python`` first fetches
setuptools from a package index, and fails where none is reachable. With
this one (pyproject.toml names it, ``requires = []``) pip needs nothing:

    pip install --no-index ./sdk/python

Run as a script it writes the wheel without pip, to carry to a machine
without the repository (``python3 sdk/python/_levers9_build.py dist``).
"""

import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "levers9"
TAG = "py3-none-any"
# Zip entries get one fixed time, so a build is the same bytes every time.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _project() -> Dict[str, str]:
    """name, version, description and requires-python from the [project]
    table of pyproject.toml (plain string values: tomllib is 3.11+)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not table:
        raise RuntimeError("pyproject.toml has no [project] table")
    fields = dict(re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"\n]*)"\s*$', table.group(1), re.M))
    for key in ("name", "version", "description", "requires-python"):
        if key not in fields:
            raise RuntimeError("pyproject.toml: [project] %s is missing" % key)
    return fields


def _metadata() -> str:
    p = _project()
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            "License: Proprietary\nClassifier: Programming Language :: Python :: 3\n"
            "Classifier: Operating System :: OS Independent\n"
            "Description-Content-Type: text/markdown\n\n%s" % (
                p["name"], p["version"], p["description"], p["requires-python"], readme))


def _sources() -> List[str]:
    """The package's modules (the same files the Go binary embeds)."""
    d = os.path.join(HERE, PACKAGE)
    return sorted("%s/%s" % (PACKAGE, n) for n in os.listdir(d) if n.endswith(".py"))


def _dist_info() -> str:
    p = _project()
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    p = _project()
    name = "%s-%s-%s.whl" % (p["name"], p["version"], TAG)
    info = _dist_info()
    files = files + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: _levers9_build\nRoot-Is-Purelib: true\nTag: %s\n"
                           % TAG).encode()),
    ]
    record = io.StringIO()
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (path, digest, len(data)))
    record.write("%s/RECORD,,\n" % info)
    files.append((info + "/RECORD", record.getvalue().encode()))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, "." + name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            entry = zipfile.ZipInfo(path, _EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    os.replace(tmp, os.path.join(directory, name))
    return name


def _read(rel: str) -> bytes:
    with open(os.path.join(HERE, rel), "rb") as f:
        return f.read()


# PEP 517


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(rel, _read(rel)) for rel in _sources()])


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel whose .pth file puts this folder on sys.path, so
    edits to levers9/ take effect without reinstalling."""
    return _write_wheel(wheel_directory, [("__editable__.%s.pth" % PACKAGE, (HERE + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    members = [(rel, _read(rel)) for rel in ["pyproject.toml", "README.md", os.path.basename(__file__)] + _sources()]
    members.append(("PKG-INFO", _metadata().encode("utf-8")))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in members:
            entry = tarfile.TarInfo("%s/%s" % (base, rel))
            entry.size, entry.mode, entry.mtime = len(data), 0o644, int(time.time())
            tar.addfile(entry, io.BytesIO(data))
    return name


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 %s DIRECTORY  (writes the levers9 wheel there)" % sys.argv[0])
    print(os.path.join(sys.argv[1], build_wheel(sys.argv[1])))

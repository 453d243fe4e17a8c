"""Code packages: a project folder as a deterministic zip, named by its hash.

The same files give the same bytes (entries sorted, timestamps fixed at
1980-01-01, modes 0644 or 0755 only), so an unchanged project is uploaded
once. Left out: .git/, __pycache__/, .venv/, venv/, node_modules/,
.levers9-data/, levers9-data/ and *.pyc. Symbolic links are followed only
to files inside the folder; others are left out.
"""

import hashlib
import io
import os
import stat
import zipfile
from typing import Any, Callable, Iterator, Optional, Tuple

from . import errors

MAX_SIZE = 256 << 20
EXCLUDED_DIRS = frozenset([".git", "__pycache__", ".venv", "venv", "node_modules", ".levers9-data", "levers9-data"])
EXCLUDED_SUFFIXES = (".pyc",)
_EPOCH = (1980, 1, 1, 0, 0, 0)


def files(root: str) -> Iterator[Tuple[str, str]]:
    """(archive name, path) of every file packed from root, sorted by name."""
    root = os.path.realpath(root)
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        # Directory links are not followed (os.walk lists them with the
        # directories): they could lead out of the folder or loop.
        dirnames[:] = sorted(d for d in dirnames
                             if d not in EXCLUDED_DIRS and not os.path.islink(os.path.join(dirpath, d)))
        for name in filenames:
            if name.endswith(EXCLUDED_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if os.path.commonpath([root, target]) != root or not os.path.isfile(target):
                    continue
            elif not os.path.isfile(path):
                continue  # sockets, devices, fifos
            arc = os.path.relpath(path, root).replace(os.sep, "/")
            found.append((arc, path))
    found.sort()
    return iter(found)


def pack(root: str) -> Tuple[bytes, str]:
    """Zips root; returns the zip's bytes and their hex SHA-256."""
    if not os.path.isdir(root):
        raise errors.BadInput("%s is not a folder" % root, code="BAD_USER_INPUT", field="project")
    buf = io.BytesIO()
    total = 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, path in files(root):
            st = os.stat(path)
            total += st.st_size
            if total > MAX_SIZE:
                raise errors.BadInput("the project folder %s holds more than 256 MiB: move data out of it (or into "
                                      "levers9-data/, which is not packed)" % root, code="BAD_USER_INPUT",
                                      field="project")
            mode = 0o755 if st.st_mode & 0o111 else 0o644
            info = zipfile.ZipInfo(arc, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the mode bits mean what they say
            info.external_attr = (stat.S_IFREG | mode) << 16
            with open(path, "rb") as f:
                zf.writestr(info, f.read())
    data = buf.getvalue()
    if len(data) > MAX_SIZE:
        raise errors.BadInput("the code package of %s is larger than 256 MiB" % root, code="BAD_USER_INPUT",
                              field="project")
    return data, hashlib.sha256(data).hexdigest()


def upload(backend: Any, root: str, log: Optional[Callable[[str], None]] = None) -> str:
    """Packs root and uploads it through backend (a GraphQLBackend) unless
    the server has it already; returns the package's hash. What run,
    deploy and serve all do before deployApp."""
    data, digest = pack(root)
    sent = backend.upload_code(digest, data)
    if log:
        log("code %s (%d bytes, %s)" % (digest[:12], len(data), "uploaded" if sent else "already there"))
    return digest

"""Bucket files through the files API (/files/BUCKET/KEY), streamed."""

import json
import os
import shutil
import tempfile
import urllib.parse
from dataclasses import dataclass
from typing import IO, Iterator, List, Union

from . import errors
from .transport import Transport

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Object:
    """A file in a bucket: its key, size in bytes and modification time (RFC 3339)."""

    key: str
    size: int
    modified: str


def _path(bucket: str, key: str = "") -> str:
    if not bucket or "/" in bucket:
        raise errors.BadInput("bucket %r: a bucket name without slashes" % bucket, code="BAD_USER_INPUT",
                              field="bucket")
    return "/files/%s/%s" % (urllib.parse.quote(bucket, safe=""),
                             "/".join(urllib.parse.quote(s, safe="") for s in key.split("/")))


class Buckets:
    """Lists, uploads, downloads and deletes bucket files (``client.buckets``).

    Keys are paths inside the bucket ("runs/1/model.bin"); the server
    refuses keys that could leave it.
    """

    def __init__(self, http: Transport):
        self._http = http

    def ls(self, bucket: str, prefix: str = "") -> List[Object]:
        """Every file of bucket whose key starts with prefix, in key order."""
        return list(self.iter(bucket, prefix))

    def iter(self, bucket: str, prefix: str = "") -> Iterator[Object]:
        """Like ls, page by page, for buckets with many files."""
        after = ""
        while True:
            q = urllib.parse.urlencode({"prefix": prefix, "after": after, "limit": 1000})
            with self._http.request("GET", _path(bucket) + "?" + q) as resp:
                page = json.loads(resp.read().decode("utf-8"))
            for o in page.get("objects") or []:
                yield Object(key=o["key"], size=int(o["size"]), modified=o["modified"])
            after = page.get("next") or ""
            if not after:
                return

    def upload(self, bucket: str, key: str, source: Union[str, "os.PathLike[str]", IO[bytes]]) -> int:
        """Uploads a local file (a path, or a binary file object) to
        bucket/key, streamed; returns the bytes sent. A key ending in "/"
        takes the file's name."""
        if isinstance(source, (str, os.PathLike)):
            if key == "" or key.endswith("/"):
                key += os.path.basename(os.fspath(source))
            with open(source, "rb") as f:
                return self._put(bucket, key, f)
        return self._put(bucket, key, source)

    def _put(self, bucket: str, key: str, f: IO[bytes]) -> int:
        try:  # the size goes first (Content-Length): measure by seeking
            start = f.tell()
            size = f.seek(0, os.SEEK_END) - start
            f.seek(start)
        except (OSError, AttributeError, ValueError):
            raise errors.BadInput("upload needs a path or a seekable binary file", code="BAD_USER_INPUT",
                                  field="source") from None
        # Re-sending the same bytes to the same key is harmless: uploads
        # are retried when the file can be rewound.
        with self._http.request("PUT", _path(bucket, key), f,
                                {"Content-Length": str(size), "Content-Type": "application/octet-stream"},
                                idempotent=True, timeout=max(self._http.timeout, 300)):
            pass
        return size

    def download(self, bucket: str, key: str, dest: Union[str, "os.PathLike[str]", IO[bytes]]) -> int:
        """Downloads bucket/key to dest (a path, a directory, or a binary
        file object), streamed; returns the bytes written. A path is
        written through a temporary file renamed at the end, so a broken
        download never leaves a truncated file under its name."""
        resp = self._http.request("GET", _path(bucket, key), timeout=max(self._http.timeout, 300))
        with resp:
            if not isinstance(dest, (str, os.PathLike)):
                return _copy(resp, dest)
            dest = os.fspath(dest)
            if os.path.isdir(dest):
                dest = os.path.join(dest, key.rsplit("/", 1)[-1])
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(dest)), prefix=".levers9-")
            try:
                with os.fdopen(fd, "wb") as f:
                    n = _copy(resp, f)
                length = resp.headers.get("Content-Length")
                if length is not None and int(length) != n:
                    raise errors.NetworkError("download of %s/%s ended after %d of %s bytes" % (bucket, key, n, length))
                os.replace(tmp, dest)
            except BaseException:
                os.unlink(tmp)
                raise
            return n

    def rm(self, bucket: str, key: str) -> None:
        """Deletes bucket/key. NotFound when there is no such file."""
        with self._http.request("DELETE", _path(bucket, key), idempotent=False):
            pass


def _copy(src, dst) -> int:
    n = 0
    while True:
        chunk = src.read(_CHUNK)
        if not chunk:
            return n
        dst.write(chunk)
        n += len(chunk)

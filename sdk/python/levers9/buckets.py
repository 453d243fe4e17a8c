"""Buckets (created, listed, deleted through GraphQL) and their files
(through the files API, /files/BUCKET/KEY, streamed)."""

import io
import json
import os
import tempfile
import urllib.parse
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Union

from . import errors
from .args import checked
from .transport import Transport

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

_CHUNK = 1 << 20

_BUCKET_FIELDS = "id name sizeBytes createdAt storage { name } project { name }"


@dataclass(frozen=True)
class Object:
    """A file in a bucket: its key, size in bytes and modification time (RFC 3339)."""

    key: str
    size: int
    modified: str


@dataclass(frozen=True)
class Bucket:
    """A bucket: its ID, name, the name of the storage it lives on, the
    bytes it holds (as the storage last reported), the project paying for
    it (None: its owner pays) and its creation time (RFC 3339)."""

    id: str
    name: str
    storage: str
    size_bytes: int
    project: Optional[str]
    created_at: str


def _bucket(node: Dict[str, Any]) -> Bucket:
    return Bucket(id=node["id"], name=node["name"], storage=(node.get("storage") or {}).get("name", ""),
                  size_bytes=int(node.get("sizeBytes") or 0), project=(node.get("project") or {}).get("name"),
                  created_at=node.get("createdAt", ""))


def _path(bucket: str, key: str = "") -> str:
    if not bucket or "/" in bucket:
        raise errors.BadInput("bucket %r: a bucket name without slashes" % bucket, code="BAD_USER_INPUT",
                              field="bucket")
    return "/files/%s/%s" % (urllib.parse.quote(bucket, safe=""),
                             "/".join(urllib.parse.quote(s, safe="") for s in key.split("/")))


class Buckets:
    """Buckets and their files (``client.buckets``).

    create, list and delete manage buckets (creating and deleting them is
    for tenant admins); ls, iter, upload, download and rm handle the files
    of one. Keys are paths inside the bucket ("runs/1/model.bin"); the
    server refuses keys that could leave it.
    """

    def __init__(self, http: Transport, client: Optional["Client"] = None):
        self._http = http
        self._client = client

    # Buckets

    @checked
    def create(self, name: str, storage: Optional[str] = None, read_groups: Optional[Sequence[str]] = None,
               write_groups: Optional[Sequence[str]] = None, project: Optional[str] = None) -> Bucket:
        """Creates a bucket (tenant admins) and returns it.

        storage: the storage it lives on, by name or ID; without one, the
        tenant's only storage (several: BadInput naming them).
        read_groups and write_groups: groups (names or IDs) whose members
        may read, or read and write, its files and mount it into jobs
        (tenant admins always may). project: the project paying for its
        storage (default: its creator pays).
        """
        gql = self._gql()
        i: Dict[str, Any] = {"name": name, "storageID": self._storage_id(storage)}
        for field, refs in (("readGroupIDs", read_groups), ("writeGroupIDs", write_groups)):
            if refs is not None:
                i[field] = self._ids("groups", "group", refs, field)
        if project:
            i["projectID"] = self._ids("projects", "project", [project], "project")[0]
        data = gql("mutation($i: CreateBucketInput!) { createBucket(input: $i) { %s } }" % _BUCKET_FIELDS, {"i": i})
        return _bucket(data["createBucket"])

    @checked
    def list(self) -> List[Bucket]:
        """The buckets the viewer sees, by name."""
        out: List[Bucket] = []
        after = None
        while True:
            conn = self._gql()(
                "query($a: Cursor) { buckets(first: 1000, after: $a, orderBy: {field: NAME}) {"
                " edges { node { %s } } pageInfo { hasNextPage endCursor } } }" % _BUCKET_FIELDS, {"a": after})["buckets"]
            out.extend(_bucket(e["node"]) for e in conn["edges"] or [])
            if not conn["pageInfo"]["hasNextPage"]:
                return out
            after = conn["pageInfo"]["endCursor"]

    @checked
    def delete(self, name: str) -> None:
        """Deletes a bucket (by name or ID; tenant admins). NotFound when
        there is no such bucket."""
        bucket_id = self._ids("buckets", "bucket", [name], "bucket")[0]
        self._gql()("mutation($id: ID!) { deleteBucket(id: $id) }", {"id": bucket_id})

    def _gql(self):
        if self._client is None:
            raise errors.Error("this Buckets has no client: use client.buckets")
        return self._client.graphql

    def _storage_id(self, storage: Optional[str]) -> str:
        if storage:
            return self._ids("storages", "storage", [storage], "storage")[0]
        conn = self._gql()("{ storages(first: 11, orderBy: {field: NAME}) { totalCount edges { node { id name } } } }")[
            "storages"]
        nodes = [e["node"] for e in conn["edges"] or []]
        if len(nodes) == 1:
            return nodes[0]["id"]
        if not nodes:
            raise errors.BadInput("the tenant has no storage yet: an admin creates one first", code="BAD_USER_INPUT",
                                  field="storage")
        names = ", ".join(n["name"] for n in nodes[:10]) + (", ..." if conn["totalCount"] > 10 else "")
        raise errors.BadInput("the tenant has %d storages: give storage= (%s)" % (conn["totalCount"], names),
                              code="BAD_USER_INPUT", field="storage")

    def _ids(self, connection: str, what: str, refs: Sequence[str], field: str) -> List[str]:
        """The IDs of objects given by name or ID, in order, in one query;
        NotFound naming the first one that is not there."""
        if isinstance(refs, str):
            refs = [refs]
        refs = [r for r in refs]
        for r in refs:
            if not isinstance(r, str) or not r:
                raise errors.BadInput("%s: give %s names or IDs, not %r" % (field, what, r), code="BAD_USER_INPUT",
                                      field=field)
        if not refs:
            return []
        # connection is one of a fixed few (never caller input).
        data = self._gql()("query($r: [String!], $i: [ID!], $n: Int) { %s(first: $n, where: {or: [{idIn: $i}, "
                           "{nameIn: $r}]}) { edges { node { id name } } } }" % connection,
                           {"r": refs, "i": refs, "n": 2 * len(refs)})[connection]
        by_ref: Dict[str, str] = {}
        for e in data["edges"] or []:
            by_ref[e["node"]["name"]] = e["node"]["id"]
            by_ref[e["node"]["id"]] = e["node"]["id"]
        for r in refs:
            if r not in by_ref:
                raise errors.NotFound("%s %r not found" % (what, r), code="NOT_FOUND", field=field)
        return [by_ref[r] for r in refs]

    # Files

    @checked
    def ls(self, bucket: str, prefix: str = "") -> List[Object]:
        """Every file of bucket whose key starts with prefix, in key order."""
        return list(self.iter(bucket, prefix))

    @checked
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

    @checked
    def upload(self, bucket: str, key: str,
               source: Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes]]) -> int:
        """Uploads to bucket/key and returns the bytes sent. source is the
        content itself (bytes), a local file's path (str or pathlib), or
        a binary file object (open(..., "rb"), io.BytesIO, sys.stdin.buffer,
        a pipe, an HTTP response): files and file objects are streamed in
        1 MiB chunks, never read whole into memory. A key ending in "/"
        takes the local file's name.

        An upload whose source can be sent again (bytes, a path, a
        seekable file) is retried after a transient failure; one from a
        stream (a pipe) cannot be, and raises NetworkError instead.
        """
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            self._check_key(key, "bytes have no file name: give the whole key")
            return self._put(bucket, key, io.BytesIO(data), len(data))
        if isinstance(source, (str, os.PathLike)):
            if key == "" or key.endswith("/"):
                key += os.path.basename(os.fspath(source))
            with open(source, "rb") as f:
                return self._put(bucket, key, f, _size(f))
        if isinstance(source, io.TextIOBase) or not callable(getattr(source, "read", None)):
            raise errors.BadInput("upload takes bytes, a path or a binary file object (open(path, 'rb'), "
                                  "sys.stdin.buffer), not %s" % type(source).__name__, code="BAD_USER_INPUT",
                                  field="source")
        self._check_key(key, "a file object has no file name: give the whole key")
        return self._put(bucket, key, source, _size(source))

    @staticmethod
    def _check_key(key: str, why: str) -> None:
        if key == "" or key.endswith("/"):
            raise errors.BadInput("key %r: %s" % (key, why), code="BAD_USER_INPUT", field="key")

    def _put(self, bucket: str, key: str, f: IO[bytes], size: Optional[int]) -> int:
        headers = {"Content-Type": "application/octet-stream"}
        if size is None:
            # A stream of unknown length goes chunked; the server counts it.
            body: Any = _Stream(f)
        else:
            body = f
            headers["Content-Length"] = str(size)
        # Re-sending the same bytes to the same key is harmless: uploads
        # are retried when the file can be rewound.
        with self._http.request("PUT", _path(bucket, key), body, headers, idempotent=True,
                                timeout=max(self._http.timeout, 300)) as resp:
            answer = resp.read(1 << 16)
        if size is not None:
            return size
        try:
            return int(json.loads(answer.decode("utf-8"))["size"])
        except (ValueError, KeyError, TypeError):
            return body.sent

    @checked
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

    @checked
    def rm(self, bucket: str, key: str) -> None:
        """Deletes bucket/key. NotFound when there is no such file."""
        with self._http.request("DELETE", _path(bucket, key), idempotent=False):
            pass


def _size(f: IO[bytes]) -> Optional[int]:
    """The bytes left in f from where it stands, or None when it cannot
    seek (a pipe, a socket, a response): it is then sent chunked."""
    try:
        if not f.seekable():
            return None
        start = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(start)
        return end - start
    except (OSError, AttributeError, ValueError):
        return None


class _Stream:
    """A stream sent chunked, 1 MiB at a time (http.client would read it
    8 KiB at a time), with no seek or tell: the transport must not rewind
    what cannot be rewound."""

    def __init__(self, f: IO[bytes]):
        self._f = f
        self.sent = 0

    def read(self, _n: int = -1) -> bytes:
        chunk = self._f.read(_CHUNK)
        if isinstance(chunk, str):
            raise errors.BadInput("upload needs a binary file object (opened with 'rb'), not a text one",
                                  code="BAD_USER_INPUT", field="source")
        self.sent += len(chunk or b"")
        return chunk


def _copy(src, dst) -> int:
    n = 0
    while True:
        chunk = src.read(_CHUNK)
        if not chunk:
            return n
        dst.write(chunk)
        n += len(chunk)

"""Sandboxes: a container to drive from Python.

::

    sb = levers9.Sandbox.create(blueprint=image, timeout=3600, ports=[8888])
    p = sb.exec("python", "-c", "print(1+1)")
    for line in p.stdout:         # lines as the process writes them
        print(line)
    print(p.wait())               # the exit code
    sb.files.write("/data/in.txt", b"data")
    print(sb.tunnels()[8888].url)
    snap = sb.snapshot()          # a Blueprint of its file system (not its memory)
    sb.terminate()

A sandbox is a job (kind SANDBOX) with one service, "sandbox", that sleeps
until it is terminated, times out or stays idle for the queue's idle
timeout; exec streams and traffic through its tunnels keep it in use.
Each exec is a WebSocket (/streams/exec) carrying terminal frames: a type
byte, a 3-byte big-endian length and the payload.
"""

import json
import struct
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import errors, sse, wsclient
from .blueprint import Blueprint

SERVICE = "sandbox"

# Terminal frame types (the server's wire.Frame*).
FRAME_STDIN, FRAME_STDOUT, FRAME_STDERR, FRAME_RESIZE = 1, 2, 3, 4
FRAME_SIGNAL, FRAME_CLOSE_STDIN, FRAME_EXIT, FRAME_ERROR = 5, 6, 7, 8
MAX_FRAME_PAYLOAD = 32 << 10

JOB_FIELDS = "id name status statusReason services { name status statusReason exitCode }"
ENDED = ("COMPLETE", "ERROR", "CANCELLED")
# The job's events: the stored ones, then each as it happens, until it ends.
_EVENTS_SUB = "subscription($id: ID!) { jobEvents(jobId: $id) { service status } }"
# The server sends a keep-alive every 15 s: a stream silent for longer is dead.
_STREAM_IDLE_TIMEOUT = 45.0


def frame(typ: int, payload: bytes = b"") -> bytes:
    """One terminal frame."""
    n = len(payload)
    if n > MAX_FRAME_PAYLOAD:
        raise ValueError("a terminal frame carries at most %d bytes" % MAX_FRAME_PAYLOAD)
    return bytes([typ, (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF]) + payload


class StreamReader:
    """A process's stdout or stderr, filled as its output arrives.

    Iterating yields text lines without their line ending as soon as each
    is complete (the last one too, at the end, if it has no newline);
    ``read()`` waits for the end and returns the rest as text,
    ``read_bytes()`` as bytes; ``lines(keepends=, binary=)`` and
    ``chunks()`` (raw bytes as they come) are the other ways to consume
    it. What is read is consumed: read a stream one way.

    Output is kept in memory until it is read, without a bound (so that
    ``files.read`` and ``read()`` work for any size): a command that
    prints much should be read as it runs (iterate, ``chunks()``) or its
    output sent to a file in the sandbox; ``Process.close()`` stops it.
    """

    def __init__(self, name: str):
        self.name = name
        self._buf = bytearray()
        self._eof = False
        self._cond = threading.Condition()

    def _feed(self, data: bytes) -> None:
        with self._cond:
            self._buf += data
            self._cond.notify_all()

    def _close(self) -> None:
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _wait(self, ready, timeout: Optional[float]) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not ready() and not self._eof:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("no output on %s for %s s" % (self.name, timeout))
            self._cond.wait(left)

    def readline_bytes(self, timeout: Optional[float] = None) -> bytes:
        """The next line with its b"\\n" (without one: the last line); b"" at the end."""
        with self._cond:
            self._wait(lambda: b"\n" in self._buf, timeout)
            i = self._buf.find(b"\n")
            n = i + 1 if i >= 0 else len(self._buf)
            out = bytes(self._buf[:n])
            del self._buf[:n]
            return out

    def readline(self, timeout: Optional[float] = None) -> str:
        """The next line with its "\\n", as text; "" at the end."""
        return self.readline_bytes(timeout).decode("utf-8", "replace")

    def lines(self, keepends: bool = False, binary: bool = False) -> Iterator[Union[str, bytes]]:
        """The lines as they complete, text (or bytes with binary=True)."""
        while True:
            line = self.readline_bytes()
            if not line:
                return
            if not keepends:
                line = line[:-1] if line.endswith(b"\n") else line
                line = line[:-1] if line.endswith(b"\r") else line
            yield line if binary else line.decode("utf-8", "replace")

    def __iter__(self) -> Iterator[str]:
        return self.lines()  # type: ignore[return-value]

    def chunks(self) -> Iterator[bytes]:
        """The output in pieces as it arrives."""
        while True:
            with self._cond:
                self._wait(lambda: bool(self._buf), None)
                if not self._buf:
                    return
                out = bytes(self._buf)
                self._buf.clear()
            yield out

    def read_bytes(self, timeout: Optional[float] = None) -> bytes:
        """Everything up to the end (the process's exit)."""
        with self._cond:
            self._wait(lambda: False, timeout)
            out = bytes(self._buf)
            self._buf.clear()
            return out

    def read(self, timeout: Optional[float] = None) -> str:
        return self.read_bytes(timeout).decode("utf-8", "replace")


class StdinWriter:
    """A process's stdin: write() sends bytes (or text as UTF-8), close()
    ends it (the process reads end of file)."""

    def __init__(self, proc: "Process"):
        self._proc = proc
        self.closed = False

    def write(self, data: Union[bytes, str]) -> int:
        if self.closed:
            raise ValueError("write to a closed stdin")
        if isinstance(data, str):
            data = data.encode("utf-8")
        view = memoryview(bytes(data))
        for i in range(0, len(view), MAX_FRAME_PAYLOAD):
            self._proc._send(frame(FRAME_STDIN, bytes(view[i:i + MAX_FRAME_PAYLOAD])))
        return len(view)

    def flush(self) -> None:
        """Nothing to do: every write is sent at once."""

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._proc._send(frame(FRAME_CLOSE_STDIN))


class Process:
    """A command running in a sandbox (Sandbox.exec). ``stdout`` and
    ``stderr`` are StreamReaders, ``stdin`` a StdinWriter; ``wait()``
    returns the exit code, ``returncode`` is None until then."""

    def __init__(self, ws: wsclient.WebSocket, command: Sequence[str]):
        self._ws = ws
        self.command = list(command)
        self.stdout = StreamReader("stdout")
        self.stderr = StreamReader("stderr")
        self.stdin = StdinWriter(self)
        self.returncode: Optional[int] = None
        self.error: Optional[str] = None
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, name="levers9-exec", daemon=True)
        self._reader.start()

    def __repr__(self) -> str:
        return "Process(%r, returncode=%r)" % (self.command, self.returncode)

    def _send(self, data: bytes) -> None:
        if self._done.is_set():
            raise errors.Error("the process has ended")
        self._ws.send_binary(data)

    def _read(self) -> None:
        # The relay carries the frames as a byte stream: a message may
        # hold several frames, or part of one.
        buf = bytearray()
        try:
            while True:
                msg = self._ws.recv()
                buf += msg.encode("utf-8") if isinstance(msg, str) else msg
                while len(buf) >= 4:
                    n = (buf[1] << 16) | (buf[2] << 8) | buf[3]
                    if len(buf) < 4 + n:
                        break
                    typ, payload = buf[0], bytes(buf[4:4 + n])
                    del buf[:4 + n]
                    if typ == FRAME_STDOUT:
                        self.stdout._feed(payload)
                    elif typ == FRAME_STDERR:
                        self.stderr._feed(payload)
                    elif typ == FRAME_EXIT:
                        self.returncode = struct.unpack("!i", payload[:4])[0] if len(payload) >= 4 else -1
                        return
                    elif typ == FRAME_ERROR:
                        self.error = payload.decode("utf-8", "replace") or "the command failed to run"
                        return
                    elif typ < FRAME_STDIN or typ > FRAME_ERROR:
                        self.error = "the exec stream sent an unknown frame type %d" % typ
                        return
        except wsclient.ConnectionClosed as e:
            if self.error is None:
                self.error = "the exec stream ended without an exit code (%s)" % e
        except errors.Error as e:
            self.error = "the exec stream failed: %s" % e
        except Exception as e:  # never leave wait() hanging
            self.error = "reading the exec stream: %r" % e
        finally:
            self.stdout._close()
            self.stderr._close()
            self._done.set()
            if not self._ws.closed:
                try:
                    self._ws.close(wait=True, timeout=2.0)
                except Exception:
                    self._ws.abort()

    def poll(self) -> Optional[int]:
        """The exit code, or None while it runs."""
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the process's end and returns its exit code.
        TimeoutError after timeout seconds (the process goes on);
        levers9.Error when it ended without one (it could not start, or
        the stream was cut)."""
        if not self._done.wait(timeout):
            raise TimeoutError("%s still runs after %s s" % (" ".join(self.command), timeout))
        if self.returncode is None:
            raise errors.Error(self.error or "the exec stream ended without an exit code")
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Sends a signal to the process (without tty)."""
        if not 0 < int(signum) < 256:
            raise ValueError("not a signal number: %r" % signum)
        self._send(frame(FRAME_SIGNAL, bytes([int(signum)])))

    def terminate(self) -> None:
        self.send_signal(15)

    def kill(self) -> None:
        """SIGKILL; wait() then returns its code (-9 or 137)."""
        try:
            self.send_signal(9)
        except errors.Error:
            pass  # ended already

    def resize(self, rows: int, cols: int) -> None:
        """The terminal's size (with tty=True)."""
        self._send(frame(FRAME_RESIZE, struct.pack("!HH", rows, cols)))

    def close(self, timeout: float = 2.0) -> None:
        """Closes the stream (the process is stopped by the node). Waits up
        to timeout seconds for the server's close, then cuts the connection:
        no thread or socket outlives it."""
        if not self._ws.closed:
            try:
                self._ws.close(wait=False)
            except Exception:
                pass
        self._reader.join(timeout)
        if self._reader.is_alive():
            self._ws.abort()  # unblocks the reader's recv
            self._reader.join(timeout)


@dataclass(frozen=True)
class Tunnel:
    """A port of the sandbox reached through the relay: url is its HTTP
    address (a token is needed, as for any relay request)."""

    port: int
    url: str


class SandboxFiles:
    """Files in a sandbox, through exec (any image with sh and cat)."""

    def __init__(self, sandbox: "Sandbox"):
        self._sb = sandbox

    def _run(self, path: str, cmd: Sequence[str], stdin: Optional[bytes] = None) -> bytes:
        p = self._sb.exec(*cmd, stdin=stdin)
        out = p.stdout.read_bytes()
        err = p.stderr.read()
        code = p.wait()
        if code != 0:
            raise _os_error(code, err, path)
        return out

    def read(self, path: str) -> bytes:
        """The file's bytes; FileNotFoundError, IsADirectoryError,
        PermissionError or OSError as the sandbox answered."""
        return self._run(path, ["cat", "--", path])

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding)

    def write(self, path: str, data: Union[bytes, str]) -> None:
        """Writes the file (text as UTF-8), making its folders."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        self._run(path, ["sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", path], stdin=bytes(data))

    def ls(self, path: str = ".") -> List[str]:
        """The names in a folder (hidden ones too), sorted; a file's own path."""
        out = self._run(path, ["ls", "-1A", "--", path])
        return sorted(n for n in out.decode("utf-8", "replace").split("\n") if n)

    def mkdir(self, path: str) -> None:
        """Makes the folder and its parents (no error when it exists)."""
        self._run(path, ["mkdir", "-p", "--", path])

    def remove(self, path: str, recursive: bool = False) -> None:
        """Removes a file (a folder and its content with recursive=True)."""
        self._run(path, ["rm", "-rf", "--", path] if recursive else ["rm", "--", path])

    rm = remove

    def exists(self, path: str) -> bool:
        p = self._sb.exec("test", "-e", path)
        return p.wait() == 0


def _os_error(code: int, stderr: str, path: str) -> OSError:
    msg = stderr.strip() or "exit code %d" % code
    low = msg.lower()
    import errno
    for needle, cls, num in (("no such file", FileNotFoundError, errno.ENOENT),
                             ("is a directory", IsADirectoryError, errno.EISDIR),
                             ("not a directory", NotADirectoryError, errno.ENOTDIR),
                             ("permission denied", PermissionError, errno.EACCES),
                             ("file exists", FileExistsError, errno.EEXIST)):
        if needle in low:
            return cls(num, msg, path)
    return OSError(errno.EIO, msg, path)


class Sandbox:
    """A running sandbox. Make one with :meth:`create`, find one with
    :meth:`from_id`. ``id`` is its job's ID. A ``with`` block terminates it."""

    def __init__(self, client, job_id: str, data: Optional[Dict[str, Any]] = None):
        self._client = client
        self.id = job_id
        self.status: str = ""
        self.status_reason: str = ""
        self.files = SandboxFiles(self)
        if data:
            self._update(data)

    def __repr__(self) -> str:
        return "Sandbox(id=%r, status=%r)" % (self.id, self.status)

    def _update(self, data: Dict[str, Any]) -> None:
        self.status = data.get("status") or self.status
        self.status_reason = data.get("statusReason") or ""
        self._services = data.get("services") or []

    @classmethod
    def create(cls, blueprint: Optional[Blueprint] = None, image: Optional[str] = None,
               gpu: Union[None, str, Sequence[str]] = None, cpu: Optional[float] = None,
               memory: Optional[int] = None, timeout: int = 3600, ports: Sequence[int] = (),
               queue: Optional[str] = None, project: Optional[str] = None, name: Optional[str] = None,
               env: Optional[Mapping[str, str]] = None, client=None, wait: bool = True,
               wait_timeout: float = 600) -> "Sandbox":
        """Starts a sandbox and waits until it runs (wait=False: returns at
        once). blueprint (built first when it is not) or image; gpu as for
        functions ("H100", "H100:2"); memory in MiB; timeout in seconds
        (the queue may cap it); ports reached with tunnels(). Raises
        levers9.Error when it ends before running, TimeoutError after
        wait_timeout seconds."""
        from .functions import box_ports, gpu_spec
        if blueprint is not None and image:
            raise errors.BadInput("give blueprint or image, not both", code="BAD_USER_INPUT", field="blueprint")
        if blueprint is not None and not isinstance(blueprint, Blueprint):
            raise errors.BadInput("blueprint must be a levers9.Blueprint, not %r" % (blueprint,),
                                  code="BAD_USER_INPUT", field="blueprint")
        if client is None:
            from .client import Client
            client = Client()
        i: Dict[str, Any] = {"timeoutSeconds": int(timeout)}
        if blueprint is not None:
            if not blueprint.id or blueprint.state != "READY":
                blueprint.build(client=client, queue=queue, project=project)
            i["blueprint"] = blueprint.id
        if image:
            i["image"] = image
        if gpu is not None:
            i["gpu"] = gpu_spec(gpu)
        if cpu is not None:
            i["cpu"] = cpu
        if memory is not None:
            i["memoryMiB"] = int(memory)
        if ports:
            i["ports"] = box_ports(ports)
        if env:
            i["env"] = [{"name": k, "value": v} for k, v in env.items()]
        for k, v in (("queue", queue), ("project", project or getattr(client, "default_project", None)),
                     ("name", name)):
            if v:
                i[k] = v
        data = client.graphql("mutation($i: SandboxInput!) { createSandbox(input: $i) { %s } }" % JOB_FIELDS,
                              {"i": i})["createSandbox"]
        sb = cls(client, data["id"], data)
        if wait:
            try:
                sb.wait_running(wait_timeout)
            except TimeoutError:
                # Not left running (and billed) once it starts.
                try:
                    sb.terminate()
                except errors.Error:
                    pass
                raise
        return sb

    @classmethod
    def from_id(cls, sandbox_id: str, client=None) -> "Sandbox":
        """The sandbox with this ID (its job's); NotFound when there is none."""
        if client is None:
            from .client import Client
            client = Client()
        return cls(client, sandbox_id).refresh()

    def refresh(self) -> "Sandbox":
        data = self._client.graphql("query($id: ID!) { node(id: $id) { ... on Job { %s } } }" % JOB_FIELDS,
                                    {"id": self.id}).get("node")
        if not data:
            raise errors.NotFound("sandbox %s not found" % self.id, code="NOT_FOUND")
        self._update(data)
        return self

    def _running(self) -> bool:
        if self.status != "RUNNING":
            return False
        svc = [s for s in self._services if s.get("name") == SERVICE]
        return not svc or svc[0].get("status") == "RUNNING"

    def wait_running(self, timeout: float = 600, poll: float = 0.05) -> "Sandbox":
        """Waits until the sandbox runs; levers9.Error when it ended first.
        The server tells when (the job's events, pushed over server-sent
        events): no polling tick between the node's start and this return.
        Where the push is not to be had (a proxy that buffers the stream,
        a dropped connection), it polls, every poll seconds at first."""
        deadline = time.monotonic() + timeout
        if not self._running() and self.status not in ENDED:
            try:
                self._await_running(deadline)
            except (errors.NetworkError, OSError, ValueError, HTTPException, sse.Dropped):
                pass  # polled below; socket.timeout is an OSError
        return self._poll_running(deadline, timeout, poll)

    def _await_running(self, deadline: float) -> None:
        """Follows the job's events until it runs or ends (then refreshed,
        for its reason); returns at the deadline, leaving the rest to
        _poll_running."""
        for data in sse.subscribe(self._client._http, _EVENTS_SUB, {"id": self.id},
                                  timeout=max(0.1, min(_STREAM_IDLE_TIMEOUT, deadline - time.monotonic()))):
            ev = data.get("jobEvents") or {}
            if ev.get("service"):
                continue  # a service's own event; the job's says it runs
            status = ev.get("status")
            if status == "RUNNING":
                self.status = "RUNNING"
                for s in self._services:
                    if s.get("name") == SERVICE:
                        s["status"] = "RUNNING"
                return
            if status in ENDED:
                self.refresh()
                return
            if time.monotonic() >= deadline:
                return

    def _poll_running(self, deadline: float, timeout: float, poll: float) -> "Sandbox":
        start = time.monotonic()
        while True:
            if self._running():
                return self
            if self.status in ENDED:
                reason = self.status_reason or next((s.get("statusReason") for s in self._services
                                                     if s.get("statusReason")), "") or "no reason given"
                raise errors.Error("sandbox %s ended before it ran (%s): %s" % (self.id, self.status, reason))
            if time.monotonic() >= deadline:
                raise TimeoutError("sandbox %s is still %s after %s s" % (self.id, self.status, timeout))
            time.sleep(poll)
            # Often within a second (the image on the node): look often.
            poll = min(poll * 1.5, 0.1 if time.monotonic() - start < 5 else 1.0)
            self.refresh()

    # Exec

    def exec(self, *cmd: str, stdin: Union[None, bytes, str] = None, tty: bool = False,
             timeout: float = 30.0) -> Process:
        """Runs a command (not through a shell: ``exec("sh", "-c", "...")``
        for one) and returns its Process at once; its output streams in as
        it runs. stdin, when given, is written and closed. Several may run
        at once. timeout bounds opening the stream. Unread stdout and stderr
        stay in memory (see StreamReader): read them, or redirect them in
        the command."""
        if len(cmd) == 1 and not isinstance(cmd[0], str) and isinstance(cmd[0], (list, tuple)):
            cmd = tuple(cmd[0])
        if not cmd or not all(isinstance(c, str) for c in cmd):
            raise errors.BadInput("exec needs a command: strings such as exec('ls', '-l')", code="BAD_USER_INPUT",
                                  field="cmd")
        q = [("cmd", c) for c in cmd]
        if tty:
            q.append(("tty", "1"))
        path = "/streams/exec/%s/%s?%s" % (urllib.parse.quote(self.id, safe=""), SERVICE,
                                           urllib.parse.urlencode(q, quote_via=urllib.parse.quote))
        http = self._client._http
        ws = wsclient.connect(http.server + path, token=http.token, timeout=timeout)
        p = Process(ws, cmd)
        if stdin is not None:
            try:
                p.stdin.write(stdin)
                p.stdin.close()
            except errors.Error:
                pass  # it ended already: wait() tells
        return p

    # Ports, snapshots, the end

    def tunnels(self) -> Dict[int, Tunnel]:
        """The sandbox's ports through the relay, by port (empty unless running)."""
        data = self._client.graphql("query($id: ID!) { node(id: $id) { ... on Job { tunnels { port url } } } }",
                                    {"id": self.id}).get("node")
        if not data:
            raise errors.NotFound("sandbox %s not found" % self.id, code="NOT_FOUND")
        base = str(getattr(self._client, "server", "") or "").rstrip("/")
        return {int(t["port"]): Tunnel(int(t["port"]), base + t["url"] if t["url"].startswith("/") else t["url"])
                for t in data.get("tunnels") or []}

    def snapshot(self, timeout: float = 1800) -> Blueprint:
        """Commits the sandbox's file system (not its memory or processes)
        to a new blueprint, READY, that other sandboxes and functions can
        run."""
        http = self._client._http
        path = "/streams/snapshot/%s/%s" % (urllib.parse.quote(self.id, safe=""), SERVICE)
        with http.request("POST", path, b"", {"Content-Type": "application/json"}, idempotent=False,
                          timeout=timeout) as resp:
            raw = resp.read()
        try:
            doc = json.loads(raw.decode("utf-8"))
            data = doc["blueprint"]
        except (ValueError, KeyError, TypeError):
            raise errors.Error("the server answered the snapshot with something else than a blueprint") from None
        bp = Blueprint._of(data)
        if bp.state == "FAILED":
            raise errors.Error("the snapshot of %s failed: %s" % (self.id, bp.failure or "no reason given"))
        return bp

    def terminate(self) -> None:
        """Stops the sandbox (cancels its job); no error when it has ended."""
        try:
            data = self._client.graphql("mutation($id: ID!) { cancelJob(id: $id) { %s } }" % JOB_FIELDS,
                                        {"id": self.id}, idempotent=True)["cancelJob"]
            self._update(data)
        except errors.BadInput:
            self.refresh()
            if self.status not in ENDED:
                raise

    def wait(self, timeout: Optional[float] = None, poll: float = 0.5) -> "Sandbox":
        """Waits until the sandbox has ended (terminated, timed out, idle)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.refresh().status not in ENDED:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("sandbox %s still runs after %s s" % (self.id, timeout))
            time.sleep(poll)
        return self

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.terminate()

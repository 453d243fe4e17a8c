"""The runner: ``python -m levers9.runner`` in a function's container.

It imports the container's function, then claims calls from the server
through the runner API (HTTP on the unix socket the agent mounts at
LEVERS9_RUNNER_SOCKET), runs them on ``concurrency`` threads and reports
each outcome with its next claim. It prints one line per call start and
end (the container's job log), except while calls are short (under 10 ms
on average): then a failed or slower call still gets its lines, and the
others one line a second that counts them.
"""

import datetime


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


PROCESS_STARTED_AT = _now()  # as early as the process can tell

import base64  # noqa: E402  (after the timestamp on purpose)
import concurrent.futures  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any, Callable, Dict, List, Optional  # noqa: E402

from . import errors, httpcall, payload  # noqa: E402
from .backend import RunnerAPI  # noqa: E402

CLAIM_WAIT_MS = 30_000
# Extra tasks claimed beyond the free threads while calls are short.
PREFETCH = 64
SHORT_CALL = 0.010
# How long the server may stay unreachable before the runner gives up.
RECONNECT_FOR = 60.0
# How long a box's port may refuse connections before the box is
# deemed crashed.
BOX_PORT_GRACE = 10.0
# How often a ready box's ports are checked (one TCP connection each).
BOX_WATCH_EVERY = 1.0


def resolve(module: str, qualname: str) -> Callable[..., Any]:
    """Imports module and returns the function at qualname (dotted), the
    raw function when it is an @app.function wrapper."""
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return getattr(obj, "raw_f", obj)


class Runner:
    def __init__(self, socket_path: str, log: Callable[[str], None] = None,
                 exit: Callable[[int], None] = os._exit,
                 box_ports: Optional[List[int]] = None, box_command: Optional[List[str]] = None):
        self.api = RunnerAPI(socket_path, timeout=CLAIM_WAIT_MS / 1000 + 60)
        self.log = log or (lambda s: print(s, flush=True))
        self._exit_process = exit
        self.fn: Optional[Callable[..., Any]] = None
        self.kind = "FUNCTION"
        self.asgi: Any = None  # asgi.Host of an ASGI function
        self.ws: Any = None  # realtime.Server of a REALTIME function
        self.ws_grace = 60.0
        # A BOX: its ports and, for a command box, its command (the
        # server passes them as arguments, see parse_box_args).
        self.box_ports: List[int] = list(box_ports or [])
        self.box_command: List[str] = list(box_command or [])
        self.box_proc: Optional[subprocess.Popen] = None
        self.box_error: Optional[str] = None  # why the box function ended, once it raised
        self.import_failure: Optional[Dict[str, str]] = None
        self.concurrency = 1
        self._cond = threading.Condition()
        self._done: List[Dict[str, Any]] = []
        self._running: Dict[str, Dict[str, Any]] = {}  # task ID -> {"t0", "timeout", "attempt"}
        self._queued = 0
        self._polling = False
        self._calls = 0
        self._call_seconds = 0.0
        self._phases: Optional[Dict[str, str]] = None
        # While calls are short, their lines are summed up once a second:
        # thousands of lines a second would cost more than the calls.
        self._quiet = 0

    # Requests, with reconnection

    def _request(self, method: str, path: str, doc: Any = None) -> Any:
        """A runner API request, retried with backoff while the agent is
        unreachable (connection errors, 5xx) for up to RECONNECT_FOR s."""
        deadline = time.monotonic() + RECONNECT_FOR
        delay = 0.1
        while True:
            try:
                return self.api.json(method, path, doc)
            except errors.NetworkError as e:
                err: errors.Error = e
            except errors.Error as e:
                if e.status is None or e.status < 500:
                    raise
                err = e
            if time.monotonic() + delay > deadline:
                self.log("levers9 runner: the runner API stays unreachable (%s): exiting" % err)
                self._exit(1)
                raise err
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _claim(self, n: int, wait_ms: int, done: List[Dict[str, Any]]) -> Dict[str, Any]:
        doc: Dict[str, Any] = {"max": n, "waitMs": wait_ms, "done": done}
        if self._phases:
            doc["phases"] = self._phases
        resp = self._request("POST", "/runner/v1/claim", doc)
        self._phases = None  # the container's start phases go once
        return resp

    # Start

    def load(self) -> Dict[str, Any]:
        info = self._request("GET", "/runner/v1/function")
        self.concurrency = max(1, int(info.get("concurrency") or 1))
        self.kind = str(info.get("kind") or "FUNCTION").upper()
        try:
            if not (self.kind == "BOX" and self.box_command):  # a command box has no function
                self.fn = resolve(info["module"], info["qualname"])
        except BaseException as e:  # noqa: B902: any import failure becomes every call's failure
            if isinstance(e, KeyboardInterrupt):
                raise
            tb = traceback.format_exc()
            self.import_failure = {"kind": "exception",
                                   "message": "importing %s.%s: %s: %s" % (info["module"], info["qualname"],
                                                                           type(e).__name__, e),
                                   "traceback": tb}
            self.log("levers9 runner: importing %s failed:\n%s" % (info["module"], tb.rstrip()))
        if self.fn is not None and self.kind == "ASGI":
            self._build_asgi()
        self._phases = {"processStartedAt": PROCESS_STARTED_AT, "importedAt": _now()}
        self.log("levers9 runner: %s function %s (%s.%s), %d at a time" % (
            self.kind, info.get("name"), info.get("module"), info.get("qualname"), self.concurrency))
        if self.kind == "REALTIME":
            self.ws_grace = float(info.get("scaledownWindowSeconds") or 60)
            self._serve_websockets()
        if self.kind == "BOX":
            # Ready (the first claim reports the phases) once every port
            # answers.
            self._start_box(float(info.get("timeoutSeconds") or 300))
        return info

    def _exit(self, code: int) -> None:
        """Exits the process: whatever way the runner leaves, a box's
        command (its own session, out of the runner's process group)
        is stopped first."""
        self._stop_box()
        self._exit_process(code)

    # Boxes

    def _start_box(self, timeout: float) -> None:
        """Starts the box (its command, or its function in a thread),
        waits until every port accepts TCP on 127.0.0.1, then watches it:
        the command exiting, the function raising or a port refusing for
        BOX_PORT_GRACE ends the container (non-zero: it is replaced while
        the box is in use)."""
        if not self.box_ports:
            self._box_failed("a box container without ports (the runner's arguments lack %s)" % BOX_PORTS_ARG)
            return
        if self.box_command:
            try:
                # Its output is the container's log; its own session, so
                # its children stop with it.
                self.box_proc = subprocess.Popen(self.box_command, start_new_session=True)
            except OSError as e:
                self._box_failed("starting %s: %s" % (self.box_command[0], e))
                return
            self.log("levers9 runner: box command %s started (pid %d)" % (
                " ".join(self.box_command), self.box_proc.pid))
        elif self.fn is None:
            self._box_failed("the box function did not import")
            return
        else:
            threading.Thread(target=self._run_box_function, name="box", daemon=True).start()
        try:
            signal.signal(signal.SIGTERM, self._box_sigterm)
        except ValueError:  # not the main thread (tests)
            pass
        deadline = time.monotonic() + timeout
        waiting = list(self.box_ports)
        pause = 0.05  # grows to 0.5 s: a slow start is not polled 20 times a second
        while waiting:
            why = self._box_ended()
            if why:
                self._box_failed(why + " before its ports answered")
                return
            waiting = [p for p in waiting if not port_open(p)]
            if not waiting:
                break
            if time.monotonic() > deadline:
                self._box_failed("port%s %s did not accept connections within %g s" % (
                    "s" if len(waiting) > 1 else "", ", ".join(map(str, waiting)), timeout))
                return
            time.sleep(pause)
            pause = min(pause * 1.5, 0.5)
        self.log("levers9 runner: box ready on port%s %s" % ("s" if len(self.box_ports) > 1 else "",
                                                            ", ".join(map(str, self.box_ports))))
        threading.Thread(target=self._watch_box, name="box-watch", daemon=True).start()

    def _run_box_function(self) -> None:
        """Calls the box function once: it may serve (blocking) or start
        something and return; raising ends the box."""
        try:
            httpcall.settle(self.fn())  # type: ignore[misc]
        except BaseException as e:  # noqa: B902: any failure ends the box
            self.box_error = "the box function raised %s: %s\n%s" % (
                type(e).__name__, e, traceback.format_exc().rstrip())
        else:
            self.log("levers9 runner: the box function returned; the box lives while its ports answer")

    def _box_ended(self) -> Optional[str]:
        """Why the box's process or function ended, or None."""
        if self.box_error:
            return self.box_error
        p = self.box_proc
        if p is not None and p.poll() is not None:
            return "the box command exited with %s" % (
                "code %d" % p.returncode if p.returncode >= 0 else "signal %d" % -p.returncode)
        return None

    def _watch_box(self) -> None:
        refused: Dict[int, float] = {}
        while True:
            time.sleep(BOX_WATCH_EVERY)
            why = self._box_ended()
            now = time.monotonic()
            for port in self.box_ports:
                if why:
                    break
                if port_open(port):
                    refused.pop(port, None)
                    continue
                since = refused.setdefault(port, now)
                if now - since >= BOX_PORT_GRACE:
                    why = "port %d refused connections for %g s" % (port, BOX_PORT_GRACE)
            if why:
                self._box_failed(why)
                return

    def _box_failed(self, why: str) -> None:
        self.log("levers9 runner: box: %s: exiting" % why)
        self._stop_box()
        sys.stdout.flush()
        self._exit(1)

    def _stop_box(self) -> None:
        """Terminates the box's command (its whole session), killing it
        when it does not stop within 5 s."""
        p = self.box_proc
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass

    def _box_sigterm(self, signum: int, frame: Any) -> None:
        self.log("levers9 runner: stopping the box")
        self._stop_box()
        sys.stdout.flush()
        self._exit(128 + signum)

    def _build_asgi(self) -> None:
        """Calls the decorated factory once (this container's app) and runs
        the app's lifespan startup; a failure fails every request."""
        from . import asgi
        try:
            self.asgi = asgi.Host(self.fn(), self.log)  # type: ignore[misc]
        except BaseException as e:  # noqa: B902: the factory's failure is every call's
            if isinstance(e, KeyboardInterrupt):
                raise
            tb = traceback.format_exc()
            self.import_failure = {"kind": "exception", "traceback": tb,
                                   "message": "building the ASGI app: %s: %s" % (type(e).__name__, e)}
            self.log("levers9 runner: building the ASGI app failed:\n%s" % tb.rstrip())
            return
        try:
            self.asgi.startup()
        except Exception as e:  # every request says it again
            self.log("levers9 runner: %s" % e)

    def _serve_websockets(self) -> None:
        """Serves the REALTIME handler on the WebSocket port; without a
        handler or a port, the container is of no use: it exits."""
        import inspect
        from . import realtime
        if self.fn is None or not inspect.iscoroutinefunction(self.fn):
            self.log("levers9 runner: a realtime function must be an importable `async def handler(ws)`: exiting")
            self._exit(1)
            return
        self.ws = realtime.Server(self.fn, self.log)
        try:
            port = httpcall.run(self.ws.start("0.0.0.0", realtime.port()))
        except OSError as e:
            self.log("levers9 runner: serving WebSockets on port %d: %s: exiting" % (realtime.port(), e))
            self._exit(1)
            return
        self.log("levers9 runner: serving WebSockets on port %d" % port)

    def _holding(self) -> bool:
        """Whether WebSockets keep the container: one is open, or one
        closed within the scale-down window. The server cannot see them,
        so the runner then claims nothing (a claim of none never scales
        the container down)."""
        ws = self.ws
        return ws is not None and (ws.open > 0 or time.monotonic() - ws.last_closed < self.ws_grace)

    def _leave(self) -> None:
        """Ends what the container serves besides calls: open WebSockets
        (closed 1001, going away) and the ASGI app's lifespan."""
        if self.ws is not None:
            try:
                httpcall.run(self.ws.stop(1001))
            except Exception as e:
                self.log("levers9 runner: closing WebSockets: %s" % e)
        if self.asgi is not None:
            self.asgi.shutdown()
        self._stop_box()

    # The claim loop

    def _short(self) -> bool:
        """Whether recent calls took under SHORT_CALL on average."""
        return self._calls >= 8 and self._call_seconds / self._calls < SHORT_CALL

    def _extra(self) -> int:
        """Tasks claimed beyond the free threads: only while calls are
        short, so that a slow call never holds others another container
        could run."""
        return PREFETCH if self._short() else 0

    def _summarize(self) -> None:
        """Logs the quiet calls of the last second in one line."""
        with self._cond:
            n, self._quiet = self._quiet, 0
        if n:
            self.log("levers9 runner: %d short calls complete in the last second" % n)

    def run(self) -> int:
        """Loads the function and serves calls until the server says exit."""
        self.load()
        pool = concurrent.futures.ThreadPoolExecutor(self.concurrency, thread_name_prefix="call")
        threading.Thread(target=self._watchdog, name="timeouts", daemon=True).start()
        while True:
            with self._cond:
                while True:
                    extra = self._extra()
                    outstanding = len(self._running) + self._queued
                    free = self.concurrency + extra - outstanding
                    # With prefetched work still queued, outcomes wait for
                    # a batch: one claim then reports many.
                    if free > 0 and (self._queued <= extra // 2 or not self._done):
                        break
                    self._cond.wait(1.0)
                done, self._done = self._done, []
                self._polling = True
            hold = self._holding()
            wait_ms = CLAIM_WAIT_MS if self.ws is None else 1000  # the socket count changes under a long poll
            try:
                resp = self._claim(0 if hold else free, 0 if hold else wait_ms, done)
            except errors.Error as e:
                self.log("levers9 runner: claim refused: %s" % e)
                self._exit(1)
                return 1
            finally:
                with self._cond:
                    self._polling = False
            tasks = resp.get("tasks") or []
            with self._cond:
                self._queued += len(tasks)
            for t in tasks:
                pool.submit(self._execute, t)
            if resp.get("exit"):
                self.log("levers9 runner: told to exit")
                self._leave()
                return 0
            if hold:
                time.sleep(1.0)

    def _report_now(self, outcomes: List[Dict[str, Any]]) -> None:
        """Reports outcomes at once (the main loop is in a long poll)."""
        try:
            self._request("POST", "/runner/v1/claim", {"max": 0, "waitMs": 0, "done": outcomes})
        except errors.Error as e:
            self.log("levers9 runner: reporting failed (%s): retried with the next claim" % e)
            with self._cond:
                self._done.extend(outcomes)
                self._cond.notify_all()

    def _finish(self, task_id: str, outcome: Dict[str, Any], seconds: float) -> None:
        with self._cond:
            if self._running.pop(task_id, None) is None:
                return  # reported already (it timed out)
            self._calls += 1
            self._call_seconds += seconds
            if self._calls > 1000:  # a moving average of recent calls
                self._call_seconds *= 0.5
                self._calls //= 2
            direct = self._polling
            if not direct:
                self._done.append(outcome)
                self._cond.notify_all()
        if direct:
            self._report_now([outcome])

    def _execute(self, task: Dict[str, Any]) -> None:
        task_id, attempt = task["id"], int(task.get("attempt") or 1)
        t0 = time.monotonic()
        started = _now()
        with self._cond:
            self._queued -= 1
            self._running[task_id] = {"t0": t0, "timeout": float(task.get("timeoutSeconds") or 0),
                                      "attempt": attempt, "startedAt": started}
        loud = not self._short()
        if loud:
            self.log("%s attempt %d: started" % (task_id, attempt))
        outcome: Dict[str, Any] = {"task": task_id, "attempt": attempt, "startedAt": started}
        try:
            if self.import_failure is not None:
                outcome["failure"] = dict(self.import_failure)
            else:
                outcome.update(self._call(task))
        except BaseException as e:  # noqa: B902: whatever happened, the call gets an outcome
            outcome["failure"] = {"kind": "exception", "message": "levers9 runner: %s: %s" % (type(e).__name__, e),
                                  "traceback": traceback.format_exc()}
        seconds = time.monotonic() - t0
        outcome["finishedAt"] = _now()
        f = outcome.get("failure")
        if loud or f or seconds >= SHORT_CALL:
            if not loud:
                self.log("%s attempt %d: started at %s" % (task_id, attempt, started))
            self.log("%s attempt %d: %s in %.1f ms" % (task_id, attempt,
                                                       "failed (%s)" % f["message"].splitlines()[0] if f else "complete",
                                                       seconds * 1000))
        else:
            with self._cond:
                self._quiet += 1
        self._finish(task_id, outcome, seconds)

    def _call(self, task: Dict[str, Any]) -> Dict[str, Any]:
        source = str(task.get("source") or "CALL").upper()
        if source == "HTTP":
            return self._call_http(task)
        if self.kind == "BOX":
            return {"failure": {"kind": "exception", "traceback": "",
                                "message": "a box answers on its ports only: it cannot be called (%s)" % source}}
        if self.kind in ("ASGI", "REALTIME"):
            return {"failure": {"kind": "exception", "traceback": "",
                                "message": "a%s %s function answers HTTP requests only: it cannot be called (%s)" % (
                                    "n" if self.kind == "ASGI" else "", self.kind.lower(), source)}}
        if source == "CRON":
            args, kwargs = (), {}  # type: ignore[var-annotated]
        else:
            args, kwargs = payload.decode_args(task.get("args"), self._get_blob)
        try:
            result = httpcall.settle(self.fn(*args, **kwargs))  # type: ignore[misc]
        except BaseException as e:  # noqa: B902: SystemExit from a function is its failure too
            return {"failure": exception_failure(e)}
        try:
            data = pickle.dumps(result, protocol=payload.PROTOCOL)
        except Exception as e:
            return {"failure": {"kind": "exception", "traceback": traceback.format_exc(),
                                "message": "the result (%s) does not pickle: %s: %s" % (type(result).__name__,
                                                                                      type(e).__name__, e)}}
        return {"result": payload.encode(data, self._put_blob)}

    def _call_http(self, task: Dict[str, Any]) -> Dict[str, Any]:
        """A call made over HTTP: the request envelope in, the response
        envelope out (any status the function answered is a result)."""
        req = httpcall.Request.from_json(payload.raw(task.get("args"), self._get_blob))
        try:
            if self.kind == "ENDPOINT":
                resp = httpcall.endpoint(self.fn, req)  # type: ignore[arg-type]
            elif self.kind == "ASGI":
                resp = self.asgi.handle(req)
            elif self.kind == "TASK_QUEUE":
                resp = httpcall.queue_item(self.fn, req)  # type: ignore[arg-type]
            elif self.kind == "REALTIME":
                resp = httpcall.error_response(426, "UPGRADE_REQUIRED", "this endpoint speaks WebSocket only")
            elif self.kind == "BOX":
                resp = httpcall.error_response(404, "NOT_FOUND", "a box answers on its ports only")
            else:
                resp = httpcall.job(self.fn, req)  # type: ignore[arg-type]
        except BaseException as e:  # noqa: B902: SystemExit from a function is its failure too
            return {"failure": exception_failure(e)}
        return {"result": payload.encode(resp.to_json(), self._put_blob)}

    def _get_blob(self, digest: str) -> bytes:
        return self.api.raw("GET", "/runner/v1/blobs/" + digest)

    def _put_blob(self, digest: str, data: bytes) -> None:
        self.api.raw("PUT", "/runner/v1/blobs/" + digest, data, "application/octet-stream")

    def _watchdog(self) -> None:
        """Fails a call that outlives its timeout, then ends the process:
        a thread cannot be stopped, and a new container replaces this one."""
        summarized = time.monotonic()
        while True:
            time.sleep(0.05)
            now = time.monotonic()
            if now - summarized >= 1.0:
                summarized = now
                self._summarize()
            with self._cond:
                late = [(tid, r) for tid, r in self._running.items() if r["timeout"] > 0 and now - r["t0"] > r["timeout"]]
                if not late:
                    continue
                outcomes = self._done
                self._done = []
                for tid, r in late:
                    del self._running[tid]
                    outcomes.append({"task": tid, "attempt": r["attempt"], "startedAt": r["startedAt"],
                                     "finishedAt": _now(),
                                     "failure": {"kind": "timeout",
                                                 "message": "the call ran longer than its timeout of %g s" % r["timeout"],
                                                 "traceback": ""}})
                    self.log("%s attempt %d: timed out after %g s" % (tid, r["attempt"], r["timeout"]))
            try:
                self._request("POST", "/runner/v1/claim", {"max": 0, "waitMs": 0, "done": outcomes})
            finally:
                self.log("levers9 runner: exiting after a timeout")
                sys.stdout.flush()
                self._exit(1)
            return


BOX_PORTS_ARG = "--box-ports"
BOX_COMMAND_ARG = "--box-command"


def parse_box_args(argv: List[str]) -> "tuple[List[int], List[str]]":
    """The ports and command of a box container, from the arguments the
    server gives its runner (functions.BoxPortsArg, BoxCommandArg: JSON)."""
    ports: List[int] = []
    command: List[str] = []
    i = 0
    while i + 1 < len(argv):
        if argv[i] == BOX_PORTS_ARG:
            ports = [int(p) for p in json.loads(argv[i + 1])]
        elif argv[i] == BOX_COMMAND_ARG:
            command = [str(w) for w in json.loads(argv[i + 1])]
        i += 2 if argv[i] in (BOX_PORTS_ARG, BOX_COMMAND_ARG) else 1
    return ports, command


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def exception_failure(e: BaseException) -> Dict[str, Any]:
    """The failure JSON of a function's exception: "Type: message", the
    traceback without the runner's own frame, and the pickled exception
    when it pickles and unpickles."""
    tb = e.__traceback__
    # The runner's frames that called the function, and the event loop's
    # for an async one: the function's own frames are what help.
    while tb is not None and tb.tb_next is not None and _ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb))
    f: Dict[str, Any] = {"kind": "exception", "message": "%s: %s" % (type(e).__name__, e) if str(e) else
                         type(e).__name__, "traceback": text}
    try:
        data = pickle.dumps(e, protocol=payload.PROTOCOL)
        pickle.loads(data)  # an exception that cannot be rebuilt helps no one
        f["exception"] = base64.b64encode(data).decode("ascii")
    except Exception:
        pass
    return f


_SDK_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_DIRS = tuple(os.path.join(os.path.dirname(os.path.abspath(os.__file__)), d) + os.sep
                     for d in ("asyncio", "concurrent"))


def _ours(filename: str) -> bool:
    f = os.path.abspath(filename)
    return f.startswith(_SDK_DIR) or f.startswith(_STDLIB_DIRS)


def main() -> int:
    path = os.environ.get("LEVERS9_RUNNER_SOCKET")
    if not path:
        print("levers9 runner: LEVERS9_RUNNER_SOCKET is not set: the runner runs inside a function's container",
              file=sys.stderr)
        return 2
    # The agent may set PYTHONPATH relative to the working directory:
    # pin it, so a function that changes directory still imports.
    sys.path[:] = [os.path.abspath(p) if p else p for p in sys.path]
    try:
        ports, command = parse_box_args(sys.argv[1:])
    except (ValueError, TypeError) as e:
        print("levers9 runner: bad box arguments: %s" % e, flush=True)
        return 2
    r = Runner(path, box_ports=ports, box_command=command)
    try:
        code = r.run()
    except errors.Error as e:  # refused by the server: nothing to retry
        print("levers9 runner: %s" % e, flush=True)
        code = 1
    finally:
        r._stop_box()  # a box's command does not outlive its runner
    sys.stdout.flush()
    os._exit(code)  # worker threads may still hold a call of a stopped app


if __name__ == "__main__":
    sys.exit(main())

"""A job's spec from Python-style arguments to the GraphQL JobSpecInput
(submit_job and estimate build it the same way)."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import errors
from .args import Fields, unknown

JOB = Fields("job", {
    "name": "name", "queue": "queue", "project": "project", "interactive": "interactive",
    "priority": "priority", "timeout_seconds": "timeoutSeconds", "retries": "retries",
    "services": "services", "mounts": "mounts",
})
SERVICE = Fields("service", {
    "name": "name", "image": "image", "command": "command", "args": "args", "env": "env", "cpu": "cpu",
    "memory_mib": "memoryMiB", "gpus": "gpus", "gpu_types": "gpuTypes", "ports": "ports", "tty": "tty",
})
# What resources= takes: the service fields that size it.
RESOURCES = Fields("resources", {"cpu": "cpu", "memory_mib": "memoryMiB", "gpus": "gpus", "gpu_types": "gpuTypes"})
MOUNT = Fields("mount", {"bucket": "bucket", "path": "path", "read_only": "readOnly"})
ENV = Fields("env", {"name": "name", "value": "value"})
PORT = Fields("port", {"name": "name", "port": "port"})

# The spec's keyword arguments that a command's one service takes; with
# services=, each service says them itself.
SERVICE_ARGS = ("image", "env", "cpu", "memory_mib", "gpus", "gpu_types", "args", "ports", "tty", "resources")

# submit_job(**spec) passed any key through before: the one camelCase key
# that worked then (a JobSpecInput field without its own parameter) still
# does. Everything else in **spec was refused by the server.
LEGACY_JOB_ARGS = {"timeoutSeconds": "timeout_seconds"}


def legacy(where: str, spec: Mapping[str, Any], given: Dict[str, Any], known: Sequence[str]) -> None:
    """Moves the old camelCase keywords of spec into given (by their
    Python names); UnknownArgument for any other keyword."""
    for k, v in spec.items():
        p = LEGACY_JOB_ARGS.get(k)
        if p is None:
            raise unknown(where, k, known)
        if given.get(p) is not None:
            raise errors.BadInput("%s: give %s once (%s is its old spelling)" % (where, p, k),
                                  code="BAD_USER_INPUT", field=p)
        given[p] = v


# The keyword arguments of a spec besides command and services.
OPTIONS = tuple(k for k in JOB.names if k != "services") + SERVICE_ARGS


def job_spec(where: str, command: Optional[Sequence[str]], services: Optional[Sequence[Mapping[str, Any]]],
             options: Mapping[str, Any], also: Sequence[str] = ()) -> Dict[str, Any]:
    """The JobSpecInput of a command (one service named main) or of
    services, with options (OPTIONS by their Python names; None means
    unset). Raises BadInput (UnknownArgument for an unknown option, named
    as an argument of where, which also takes also) before any request."""
    for k in options:
        if k not in OPTIONS:
            raise unknown(where, k, OPTIONS + ("command", "services") + tuple(also))
    if (command is None) == (services is None):
        raise errors.BadInput("give either command or services", code="BAD_USER_INPUT", field="services")
    opts = {k: v for k, v in options.items() if v is not None}
    svc_args = {k: opts.pop(k) for k in SERVICE_ARGS if k in opts}
    if command is not None:
        svc: Dict[str, Any] = {"name": "main", "command": command}
        resources = RESOURCES.wire(svc_args.pop("resources", {}))
        for k, v in svc_args.items():
            w = SERVICE.names[k]
            if w in resources:
                raise errors.BadInput("%s is given twice (as %s= and in resources)" % (k, k), code="BAD_USER_INPUT",
                                      field=k)
            resources[w] = v
        svc.update(resources)
        wire_services = [service(svc, "")]
    else:
        if svc_args:
            k = sorted(svc_args)[0]
            raise errors.BadInput("%s= goes with a command (its one service); with services=, give it in each service"
                                  % k, code="BAD_USER_INPUT", field=k)
        if isinstance(services, (str, bytes, Mapping)) or not isinstance(services, Sequence):
            raise errors.BadInput("services is a list of service dicts, not %r" % (services,), code="BAD_USER_INPUT",
                                  field="services")
        wire_services = [service(s, "services[%d]" % i) for i, s in enumerate(services)]
    s = JOB.wire(opts)
    s["services"] = wire_services
    if "mounts" in s:
        s["mounts"] = [MOUNT.wire(m, "mounts[%d]" % i) for i, m in enumerate(_list(s["mounts"], "mounts"))]
    return s


def service(given: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """One ServiceSpecInput; env may be a dict, ports a dict of name to
    port, gpu_types one type."""
    s = SERVICE.wire(given, where or "service")
    cmd = s.get("command")
    if isinstance(cmd, (str, bytes)):
        raise errors.BadInput("%s is a list of arguments, such as ['echo', 'hi']" % _at(where, "command"),
                              code="BAD_USER_INPUT", field="command")
    if cmd is not None:
        s["command"] = list(cmd)
    if isinstance(s.get("gpuTypes"), str):
        s["gpuTypes"] = [s["gpuTypes"]]
    if "env" in s:
        s["env"] = env(s["env"], _at(where, "env"))
    if "ports" in s:
        p = s["ports"]
        if isinstance(p, Mapping):
            p = [{"name": k, "port": v} for k, v in p.items()]
        at = _at(where, "ports")
        s["ports"] = [PORT.wire(x, "%s[%d]" % (at, i)) for i, x in enumerate(_list(p, at))]
    return s


def env(given: Union[Mapping[str, str], Sequence[Mapping[str, str]]], where: str) -> List[Dict[str, str]]:
    """EnvVarInputs from a dict ({"A": "1"}) or a list of {"name", "value"}."""
    if isinstance(given, Mapping):
        return [{"name": k, "value": v} for k, v in given.items()]
    return [ENV.wire(e, "%s[%d]" % (where, i)) for i, e in enumerate(_list(given, where))]


def _at(where: str, sub: str) -> str:
    return "%s.%s" % (where, sub) if where else sub


def _list(v: Any, where: str) -> List[Any]:
    if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
        raise errors.BadInput("%s must be a list, not %r" % (where, v), code="BAD_USER_INPUT", field=where)
    return list(v)

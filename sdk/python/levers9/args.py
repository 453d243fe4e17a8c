"""Python-style arguments: the one place that maps them to the API's
camelCase and refuses unknown ones.

The SDK takes snake_case keywords and dict keys (``timeout_seconds=``,
``{"gpu_types": [...]}``) and sends the API's names (``timeoutSeconds``,
``gpuTypes``). A name nothing takes is refused here, before any request,
with the closest spelling: the server's own refusal ("unknown field")
would come later and without the name.
"""

import difflib
import functools
import inspect
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, TypeVar

from . import errors

F = TypeVar("F", bound=Callable[..., Any])


class UnknownArgument(errors.BadInput, TypeError):
    """An argument or key that nothing takes. A TypeError, as Python
    raises for an unexpected keyword, and a levers9.BadInput (``field``
    names it) for code that catches the SDK's errors."""

    def __str__(self) -> str:
        return self.message


def unknown(where: str, name: str, known: Iterable[str], what: str = "keyword argument") -> UnknownArgument:
    """The error for the argument (or dict key: what) name, which where
    (``"submit_job()"``, ``"services[0]"``) does not take; it suggests the
    closest of known."""
    choices = sorted({k for k in known if not k.startswith("_")})
    hint = closest(name, choices)
    text = "%s got an unexpected %s %r" % (where, what, name)
    if hint:
        text += "; did you mean %r?" % hint
    elif choices:
        text += "; it takes %s" % ", ".join(choices)
    return UnknownArgument(text, code="BAD_USER_INPUT", field=name)


def closest(name: str, choices: List[str]) -> Optional[str]:
    """The choice name most likely means: the same letters spelt in
    another case or style (gpuTypes, GPU_TYPES for gpu_types) first, else
    difflib's closest match."""
    if not isinstance(name, str):
        return None
    squashed = {_squash(c): c for c in choices}
    if _squash(name) in squashed:
        return squashed[_squash(name)]
    lower = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(name.lower(), list(lower), n=1)
    return lower[match[0]] if match else None


def _squash(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def checked(fn: F) -> F:
    """Decorates a public function so that an unknown keyword raises
    UnknownArgument (with the close spelling) instead of Python's plain
    TypeError. Functions taking **kwargs check those themselves."""
    sig = inspect.signature(fn)
    params = sig.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        raise AssertionError("checked(%s): it takes **kwargs" % fn.__qualname__)
    names = frozenset(p.name for p in params
                      if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))
    where = _display_name(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for k in kwargs:
            if k not in names:
                raise unknown(where, k, names - {"self", "cls"})
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _display_name(fn: Callable[..., Any]) -> str:
    # Client.__init__ is called as levers9.Client(...).
    qual = fn.__qualname__
    if qual.endswith(".__init__"):
        qual = qual[: -len(".__init__")]
    return qual + "()"


class Fields:
    """The keys one API input type takes: each Python name and its wire
    name. Wire spellings are accepted as they are too, because dicts in
    the API's own spelling always worked (``{"memoryMiB": 512}``)."""

    def __init__(self, what: str, names: Mapping[str, str]):
        self.what = what
        self.names = dict(names)
        self._accepted = dict(self.names)
        self._accepted.update({w: w for w in self.names.values()})

    def wire(self, given: Mapping[str, Any], where: Optional[str] = None) -> Dict[str, Any]:
        """given with wire names; UnknownArgument for a key it does not
        take, BadInput for a key given in both spellings."""
        where = where or self.what
        if not isinstance(given, Mapping):
            raise errors.BadInput("%s must be a dict, not %r" % (where, given), code="BAD_USER_INPUT", field=where)
        out: Dict[str, Any] = {}
        for k, v in given.items():
            w = self._accepted.get(k)
            if w is None:
                raise unknown(where, k, self.names, "key")
            if w in out:
                raise errors.BadInput("%s: %s is given twice (as %s and %s)" % (where, k, self.python(w), w),
                                      code="BAD_USER_INPUT", field=k)
            out[w] = v
        return out

    def python(self, wire: str) -> str:
        """The Python name of a wire name."""
        for p, w in self.names.items():
            if w == wire:
                return p
        return wire

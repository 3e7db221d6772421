"""A step's options, checked once, and how each call or block names its key, run, target and
payload: ``run_id:step_id[:target]``, or what a ``key=`` function gives. No I/O: both the sync
and the asyncio step use it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from idempo._base import int_arg, text_arg
from idempo.errors import InvalidArgument
from idempo.step._answers import OnPending
from idempo.step._errormap import DEFAULT_ERRORS, ErrorMap

Identity = tuple[str, str, str, Any]
"""A call's key, run, target and payload."""


def _check_options(
    step_id: str,
    run_id: str | None,
    target: str | None,
    fingerprint_fields: tuple[str, ...],
    tool_kind: str,
    lease_ms: int,
) -> None:
    text_arg("step_id", step_id)
    text_arg("tool_kind", tool_kind)
    int_arg("lease_ms", lease_ms)
    for name, value in (("run_id", run_id), ("target", target)):
        if value is not None:
            text_arg(name, value)
    if isinstance(fingerprint_fields, str | bytes):
        raise InvalidArgument(
            "fingerprint_fields must be a tuple of JSON pointers, not a single string "
            f"{fingerprint_fields!r}"
        )
    if ":" in step_id:
        raise InvalidArgument(
            f"step id {step_id!r} contains ':', which separates the parts of a key "
            "(run_id:step_id[:target])"
        )


def _arguments(
    signature: inspect.Signature, args: Any, kwargs: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A call's arguments by parameter, defaults applied; and by name, with what **kwargs took."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    values = dict(bound.arguments)
    named = dict(values)
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            named.update(values.get(name, {}))
    return values, named


class StepOptions:
    """A step's options and how a call names its key and payload: what both twins share."""

    def __init__(
        self,
        step_id: str,
        *,
        run_id: str | None = None,
        target: str | None = None,
        payload: Any = None,
        run_id_arg: str = "run_id",
        target_arg: str | None = None,
        key: Callable[..., str] | None = None,
        payload_of: Callable[..., Any] | None = None,
        fingerprint_fields: tuple[str, ...] = (),
        tool_kind: str = "protected_write",
        lease_ms: int = 30_000,
        on_pending: OnPending = OnPending.RAISE,
        deadline_s: float = 30.0,
        errors: ErrorMap = DEFAULT_ERRORS,
    ) -> None:
        _check_options(step_id, run_id, target, fingerprint_fields, tool_kind, lease_ms)
        self.step_id = step_id
        self._run_id = run_id
        self._target = target
        self._payload = payload
        self._run_id_arg = run_id_arg
        self._target_arg = target_arg
        self._key_fn = key
        self._payload_of = payload_of
        self._fields = fingerprint_fields
        self.tool_kind = tool_kind
        self._lease_ms = lease_ms
        self._on_pending = on_pending
        self._deadline_s = deadline_s
        self._errors = errors

    # --- the decorator ---------------------------------------------------------------------

    def _check_signature(self, signature: inspect.Signature) -> None:
        """Refuses, at decoration, a function whose calls could not name their key or payload."""
        if self._key_fn is not None:
            return
        names = signature.parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in names.values())
        wanted = [(self._run_id_arg, "run_id_arg")] if self._run_id is None else []
        if self._target_arg is not None and self._target is None:
            wanted.append((self._target_arg, "target_arg"))
        for name, option in wanted:
            if name not in names and not takes_any:
                raise InvalidArgument(
                    f"step '{self.step_id}': the function has no argument {name!r} ({option}); "
                    "name the run's argument with run_id_arg=, or give run_id= or key="
                )
        first = next(iter(names), None)
        if first in ("self", "cls") and self._payload_of is None:
            raise InvalidArgument(
                f"step '{self.step_id}' decorates a method: its payload would hold {first!r}, "
                "which is no JSON value; pass payload_of= (the arguments that make the payload)"
            )

    def _call_identity(self, signature: inspect.Signature, args: Any, kwargs: Any) -> Identity:
        """The call's key, run, target and payload."""
        values, named = _arguments(signature, args, kwargs)
        if self._key_fn is not None:
            key = self._key_from_function(args, kwargs)
            run_id, target = key.split(":", 1)[0], ""
        else:
            key, run_id, target = self._key_from_arguments(named)
        payload = self._payload_of(*args, **kwargs) if self._payload_of else values
        return key, run_id, target, payload

    def _key_from_function(self, args: Any, kwargs: Any) -> str:
        """What the ``key=`` function gives for the call, checked to be the same twice."""
        assert self._key_fn is not None
        key = self._key_fn(*args, **kwargs)
        if not isinstance(key, str):
            raise InvalidArgument(
                f"step '{self.step_id}': the key function returned a "
                f"{type(key).__name__}, not a str"
            )
        # Evaluated twice: a key made from a clock or a fresh UUID differs between the two,
        # and would make every delivery a new operation. A value that changes more slowly
        # (a time rounded to the second, a counter kept elsewhere) is not caught here.
        again = self._key_fn(*args, **kwargs)
        if again != key:
            raise InvalidArgument(
                f"step '{self.step_id}': the key function gave {key!r}, then {again!r} for "
                "the same arguments; a key must be a function of the arguments only, never "
                "of a clock or a fresh UUID"
            )
        return key

    def _key_from_arguments(self, named: dict[str, Any]) -> tuple[str, str, str]:
        """The key, run and target the call's arguments (or the step's options) name."""
        given = named.get(self._run_id_arg)
        if given is None and not self._run_id:
            # "None" would be one run shared by every caller that passes None.
            raise InvalidArgument(
                f"step '{self.step_id}': the argument {self._run_id_arg!r} is None; "
                "a step needs the run's id"
            )
        run_id = self._run_id or str(given)
        target = self._target or ""
        if not target and self._target_arg:
            if named.get(self._target_arg) is None:
                raise InvalidArgument(
                    f"step '{self.step_id}': the argument {self._target_arg!r} (target_arg) "
                    "is missing or None"
                )
            target = str(named[self._target_arg])
        return self._key_of(run_id, target), run_id, target

    def _key_of(self, run_id: str, target: str) -> str:
        """``run_id:step_id[:target]``; a run id with ':' is refused, as two calls could share a
        key (the run is what a key holds before its first ':'; step ids hold none)."""
        if ":" in run_id:
            raise InvalidArgument(
                f"step '{self.step_id}': run id {run_id!r} contains ':', which separates the "
                "parts of a key (run_id:step_id[:target]); use another character or key="
            )
        return f"{run_id}:{self.step_id}" + (f":{target}" if target else "")

    # --- the context manager ---------------------------------------------------------------

    def _block_identity(self) -> Identity:
        """The key, run, target and payload of a ``with`` block."""
        if self._run_id is None:
            raise InvalidArgument("a step used with 'with' needs run_id=")
        target = self._target or ""
        return self._key_of(self._run_id, target), self._run_id, target, self._payload

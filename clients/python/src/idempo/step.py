"""Step middleware: a step of a run runs once, its result or terminal error recorded and replayed.

``@ledger.step("charge", target_arg="order_id")`` decorates a function whose ``run_id`` argument
names the run; the key is ``run_id:step_id[:target]``. ``with ledger.step("charge", run_id=...,
payload=...) as step`` does the same around a block. The ledger decides every answer; this module
only turns the answers into a call, a replay, an exception or a pending marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import math
import time
from collections.abc import Callable, Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from idempo._base import int_arg, text_arg
from idempo._heartbeat import Beat
from idempo.errors import IdempoError, InvalidArgument, LedgerUnavailable
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    ClaimOutcome,
    InProgress,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    Replayed,
    RetryLater,
)

if TYPE_CHECKING:
    from idempo.aio import AsyncLedger
    from idempo.ledger import Ledger

__all__ = [
    "DEFAULT_ERRORS",
    "AsyncStep",
    "Classified",
    "ErrorMap",
    "OnPending",
    "Pending",
    "Step",
    "StepConflict",
    "StepFailed",
    "StepHandle",
    "StepPending",
]

P = ParamSpec("P")
R = TypeVar("R")


class OnPending(Enum):
    """What a step does when the ledger answers InProgress, RetryLater, ReconcileRequired or
    BudgetExhausted instead of letting it run."""

    RAISE = "raise"  # raise StepPending at once
    WAIT = "wait"  # claim again until the deadline, then raise StepPending
    RETURN = "return"  # return a Pending marker instead of the body's result


@dataclass(frozen=True, slots=True)
class Pending:
    """The marker a step returns under ``OnPending.RETURN``: the ledger's answer."""

    key: str
    outcome: ClaimOutcome


class StepPending(Exception):
    """The step may not run now: another worker holds it, it waits, or a person must decide."""

    def __init__(self, key: str, outcome: ClaimOutcome) -> None:
        super().__init__(f"step '{key}' is not runnable now: {type(outcome).__name__}")
        self.key = key
        self.outcome = outcome


class StepConflict(Exception):
    """The key's record was made for another payload or projection: a bug, never retried."""

    def __init__(self, key: str, outcome: PayloadMismatch | ProjectionMismatch) -> None:
        super().__init__(f"step '{key}' conflicts with its record: {type(outcome).__name__}")
        self.key = key
        self.outcome = outcome


class StepFailed(Exception):
    """The recorded terminal error of a step, raised again on every later delivery."""

    def __init__(self, key: str, error_class: str, detail: str) -> None:
        super().__init__(f"step '{key}' failed earlier: {error_class}: {detail}")
        self.key = key
        self.error_class = error_class
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Classified:
    """The error class an exception is recorded under, and the wait it asks for."""

    error_class: str
    retry_after_ms: int | None = None


def _http_status(error: BaseException) -> int | None:
    for holder in (error, getattr(error, "response", None)):
        for name in ("status_code", "status"):
            status = getattr(holder, name, None)
            if isinstance(status, int):
                return status
    return None


# The longest wait the ledger records (ten years, its ceiling of a retry delay).
MAX_RETRY_AFTER_MS = 315_360_000_000


def _header(headers: Any, name: str) -> Any:
    """A header's value, its name matched without regard to case (botocore's plain dicts are
    lowercase)."""
    if not isinstance(headers, Mapping):
        return None
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, found in headers.items():
        if isinstance(key, str) and key.lower() == wanted:
            return found
    return None


def _retry_after_ms(error: BaseException) -> int | None:
    """The wait a Retry-After asks for, in ms, within 0 and the ledger's ceiling; None for what
    is no number of seconds (an HTTP date, garbage, NaN): the ledger's backoff applies."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or getattr(error, "headers", None)
    value = _header(headers, "Retry-After")
    if value is None:
        value = getattr(error, "retry_after", None)
    if value is None or isinstance(value, bool):
        return None
    try:
        seconds = float(value.strip() if isinstance(value, str | bytes) else value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(seconds):
        return None
    if seconds * 1000 >= MAX_RETRY_AFTER_MS:
        return MAX_RETRY_AFTER_MS
    return max(0, int(seconds * 1000))


class ErrorMap:
    """Classifies a body's exception: the rules added first, then the defaults (docs/python.md).

    Defaults: an HTTP 429 is ``rate_limited`` (with its Retry-After), other 5xx ``transient``, 401
    and 403 ``auth``, other 4xx ``validation``; timeouts and connection errors ``transient``;
    PermissionError ``auth``; ValueError, TypeError and KeyError ``validation``; anything else
    ``unknown_outcome`` on a protected write (reconciled, never run again blindly) and
    ``transient`` on a read or idempotent write.
    """

    def __init__(self, rules: Mapping[type[BaseException], str] | None = None) -> None:
        self._rules = dict(rules or {})

    def extend(self, rules: Mapping[type[BaseException], str]) -> ErrorMap:
        """A map that tries ``rules`` first (the most specific type wins), then these."""
        return ErrorMap({**rules, **self._rules})

    def classify(self, error: BaseException, tool_kind: str) -> Classified:
        for cls in type(error).__mro__:
            if cls in self._rules:
                error_class = self._rules[cls]
                retry = _retry_after_ms(error) if error_class == "rate_limited" else None
                return Classified(error_class, retry)
        status = _http_status(error)
        if status == 429:
            return Classified("rate_limited", _retry_after_ms(error))
        if status is not None and 500 <= status < 600:
            return Classified("transient")
        if status in (401, 403):
            return Classified("auth")
        if status is not None and 400 <= status < 500:
            return Classified("validation")
        if isinstance(error, TimeoutError | ConnectionError):
            return Classified("transient")
        if isinstance(error, PermissionError):
            return Classified("auth")
        if isinstance(error, ValueError | TypeError | KeyError):
            return Classified("validation")
        return Classified("unknown_outcome" if tool_kind == "protected_write" else "transient")


DEFAULT_ERRORS = ErrorMap()


def _detail(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:4000]


class _Options:
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

    def _call_identity(
        self, signature: inspect.Signature, args: Any, kwargs: Any
    ) -> tuple[str, str, str, Any]:
        """The call's key, run, target and payload."""
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        named = dict(values)  # with what **kwargs took
        for name, parameter in signature.parameters.items():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                named.update(values.get(name, {}))
        if self._key_fn is not None:
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
            run_id, target = key.split(":", 1)[0], ""
        else:
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
            key = self._key_of(run_id, target)
        payload = self._payload_of(*args, **kwargs) if self._payload_of else values
        return key, run_id, target, payload

    def _key_of(self, run_id: str, target: str) -> str:
        """``run_id:step_id[:target]``; a run id with ':' is refused, as two calls could share a
        key (the run is what a key holds before its first ':'; step ids hold none)."""
        if ":" in run_id:
            raise InvalidArgument(
                f"step '{self.step_id}': run id {run_id!r} contains ':', which separates the "
                "parts of a key (run_id:step_id[:target]); use another character or key="
            )
        return f"{run_id}:{self.step_id}" + (f":{target}" if target else "")

    def _block_identity(self) -> tuple[str, str, str, Any]:
        """The key, run, target and payload of a ``with`` block."""
        if self._run_id is None:
            raise InvalidArgument("a step used with 'with' needs run_id=")
        target = self._target or ""
        return self._key_of(self._run_id, target), self._run_id, target, self._payload

    def _settle(self, key: str, outcome: ClaimOutcome, left: float) -> Any:
        """What a claim's answer means for the call: ``_RUN``, the value it answers instead, or a
        ``_Wait``; raises for a recorded error, a conflict or a pending answer under RAISE."""
        if isinstance(outcome, Claimed):
            return _RUN
        if isinstance(outcome, Replayed):
            if outcome.error is not None:
                raise StepFailed(key, outcome.error.error_class, outcome.error.detail)
            return outcome.result
        if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
            raise StepConflict(key, outcome)
        assert isinstance(outcome, InProgress | RetryLater | ReconcileRequired | BudgetExhausted)
        if self._on_pending is OnPending.RETURN:
            return Pending(key, outcome)
        if self._on_pending is OnPending.RAISE or left <= 0:
            raise StepPending(key, outcome)
        return _Wait(outcome.at if isinstance(outcome, RetryLater) else None)


class Step(_Options):
    """One step of a run, bound to a ``Ledger``: a decorator or a context manager."""

    def __init__(self, ledger: Ledger, step_id: str, **options: Any) -> None:
        super().__init__(step_id, **options)
        self._ledger = ledger
        # The blocks open on this object, innermost last: per thread and per asyncio task (a
        # context variable), so that two of them sharing the object never mix their records.
        self._open: ContextVar[tuple[tuple[_Run | None, _Heartbeat | None, StepHandle], ...]] = (
            ContextVar(f"idempo-step-{step_id}", default=())
        )

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn)
        self._check_signature(signature)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                key, run_id, target, payload = self._call_identity(signature, args, kwargs)
                run = _Run(self, key, run_id, payload, target)
                began = await asyncio.to_thread(run.begin)
                if began is not _RUN:
                    return began
                with run.heartbeat():
                    try:
                        value = await fn(*args, **kwargs)
                    except BaseException as error:
                        await asyncio.to_thread(run.failed, error)
                        raise
                await asyncio.to_thread(run.succeeded, value)
                return value

            return cast(Callable[P, R], run_async)

        @functools.wraps(fn)
        def run_sync(*args: P.args, **kwargs: P.kwargs) -> R:
            key, run_id, target, payload = self._call_identity(signature, args, kwargs)
            run = _Run(self, key, run_id, payload, target)
            began = run.begin()
            if began is not _RUN:
                return cast(R, began)
            with run.heartbeat():
                try:
                    value = fn(*args, **kwargs)
                except BaseException as error:
                    run.failed(error)
                    raise
            run.succeeded(value)
            return value

        return run_sync

    # --- the context manager ---------------------------------------------------------------

    def __enter__(self) -> StepHandle:
        key, run_id, target, payload = self._block_identity()
        run = _Run(self, key, run_id, payload, target)
        began = run.begin()
        handle = StepHandle(key, began is _RUN, None if began is _RUN else began)
        beat: _Heartbeat | None = None
        if handle.should_run:
            beat = run.heartbeat()
            beat.__enter__()
        self._open.set((*self._open.get(), (run if handle.should_run else None, beat, handle)))
        return handle

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        opened = self._open.get()
        if not opened:
            return
        (run, beat, handle), rest = opened[-1], opened[:-1]
        self._open.set(rest)
        if run is None:
            return
        if beat is not None:
            beat.__exit__(kind, error, tb)
        if error is not None:
            run.failed(error)
        else:
            run.succeeded(handle.result)


@dataclass(slots=True)
class StepHandle:
    """What ``with ledger.step(...)`` gives the block: run when ``should_run``, then set
    ``result``; otherwise ``result`` is the recorded one (or a Pending marker)."""

    key: str
    should_run: bool
    result: Any


class _Running:
    pass


_RUN = _Running()


@dataclass(frozen=True, slots=True)
class _Wait:
    """Claim again later: at ``until_ms`` on the ledger's clock (RetryLater), or after a backoff."""

    until_ms: int | None


class _Backoff:
    """The pending policy's waits until the deadline: a RetryLater's time, else 50 ms to 1 s."""

    def __init__(self, deadline_s: float) -> None:
        self._deadline = time.monotonic() + deadline_s
        self._pause = 0.05

    def left(self) -> float:
        return self._deadline - time.monotonic()

    def pause(self, wait: _Wait, now_ms: int) -> float:
        left = self.left()
        if wait.until_ms is not None:
            return min(max((wait.until_ms - now_ms) / 1000, 0.01), left)
        pause, self._pause = self._pause, min(self._pause * 2, 1.0)
        return min(pause, left)


def _note_unrecorded(error: BaseException, refused: IdempoError) -> None:
    error.add_note(f"idempo: the failure was not recorded: {refused.code}: {refused}")


class _Run:
    """One delivery of a step: claim, then record what the body did."""

    def __init__(self, step: Step, key: str, run_id: str, payload: Any, target: str = "") -> None:
        self.step = step
        self.key = key
        self.run_id = run_id
        self.payload = payload
        self.target = target
        self.token = 0
        self.lost: IdempoError | None = None
        self.unreachable: IdempoError | None = None

    def _claim(self) -> ClaimOutcome:
        s = self.step
        return s._ledger.claim(
            self.key,
            self.payload,
            fingerprint_fields=s._fields,
            tool_kind=s.tool_kind,
            run_id=self.run_id,
            step_id=s.step_id,
            target=self.target,
            lease_ms=s._lease_ms,
        )

    def begin(self) -> Any:
        """``_RUN`` when the body is to run; otherwise what the call answers instead."""
        backoff = _Backoff(self.step._deadline_s)
        while True:
            outcome = self._claim()
            answer = self.step._settle(self.key, outcome, backoff.left())
            if not isinstance(answer, _Wait):
                if isinstance(outcome, Claimed):
                    self.token = outcome.token
                return answer
            now_ms = self.step._ledger.now_ms() if answer.until_ms is not None else 0
            time.sleep(backoff.pause(answer, now_ms))

    def heartbeat(self) -> _Heartbeat:
        return _Heartbeat(self)

    def succeeded(self, value: Any) -> None:
        try:
            self.step._ledger.complete(self.key, self.token, value)
        except IdempoError as error:
            _note_lost(error, self.lost)
            if error.code == "invalid_json":
                # The effect happened but its result cannot be recorded: never run it blindly again.
                self.step._ledger.fail(self.key, self.token, "unknown_outcome", str(error))
            raise

    def failed(self, error: BaseException) -> Operation | None:
        """Records the body's exception; the caller re-raises it, noted if it went unrecorded.
        The record, or None when the ledger refused it."""
        found = self.step._errors.classify(error, self.step.tool_kind)
        try:
            return self.step._ledger.fail(
                self.key,
                self.token,
                found.error_class,
                _detail(error),
                retry_after_ms=found.retry_after_ms,
            )
        except IdempoError as refused:
            _note_lost(refused, self.lost)
            _note_unrecorded(error, refused)
            return None


# How soon a heartbeat that could not reach the ledger tries again.
_RETRY_UNREACHABLE_S = 0.25


def _note_lost(refused: IdempoError, lost: IdempoError | None) -> None:
    """Says why a record after the body was refused when the heartbeat lost the lease."""
    if lost is not None and refused.code in ("stale_lease", "illegal_transition"):
        refused.add_note(
            f"idempo: the step's lease was lost while its body ran (heartbeat refused: "
            f"{lost.code}: {lost}); the body's result was not recorded"
        )


class _Heartbeat:
    """Extends the lease every third of it while the body runs: a beat on the ledger's heartbeat
    thread (the body may block), sent only once the body outlives a third of the lease."""

    __slots__ = ("_beat", "_run")

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._beat: Beat | None = None

    def _send(self) -> bool | float:
        run = self._run
        step = run.step
        ledger = step._ledger
        interval = step._lease_ms / 3000
        statement = ledger._heartbeat(run.key, run.token, step._lease_ms)
        try:
            try:
                # The pool's wait is bounded: a connection it cannot hand out soon is not waited
                # for while the lease runs out.
                ledger._do(statement, timeout=interval / 2)
            except LedgerUnavailable:
                # The pool reconnects with a backoff of seconds after an outage: one connection
                # of its own, at once.
                ledger._direct(statement, interval)
        except LedgerUnavailable as error:
            # The ledger is out of reach, not the lease lost: try again soon, until the ledger
            # answers (a beat, or the refusal of a lease really lost).
            run.unreachable = error
            return min(interval, _RETRY_UNREACHABLE_S)
        except IdempoError as error:
            # A lost lease (StaleLease, IllegalTransition) ends the beat; the record after the
            # body is refused as stale, and says why.
            run.lost = error
            return False
        run.unreachable = None
        return True

    def __enter__(self) -> _Heartbeat:
        step = self._run.step
        self._beat = step._ledger._heartbeats.start(step._lease_ms / 3000, self._send)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._beat is not None:
            self._run.step._ledger._heartbeats.cancel(self._beat)


class AsyncStep(_Options):
    """One step of a run, bound to an ``AsyncLedger``: a decorator of ``async def`` functions or
    an ``async with`` block; the same options and answers as :class:`Step`."""

    def __init__(self, ledger: AsyncLedger, step_id: str, **options: Any) -> None:
        super().__init__(step_id, **options)
        self._ledger = ledger
        # The blocks open on this object, innermost last, per asyncio task (see Step).
        self._open: ContextVar[
            tuple[tuple[_AsyncRun | None, _AsyncHeartbeat | None, StepHandle], ...]
        ] = ContextVar(f"idempo-async-step-{step_id}", default=())

    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, R]]
    ) -> Callable[P, Coroutine[Any, Any, R]]:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError("AsyncLedger.step decorates async functions; Ledger.step the others")
        signature = inspect.signature(fn)
        self._check_signature(signature)

        @functools.wraps(fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            key, run_id, target, payload = self._call_identity(signature, args, kwargs)
            step_run = _AsyncRun(self, key, run_id, payload, target)
            began = await step_run.begin()
            if began is not _RUN:
                return cast(R, began)
            async with step_run.heartbeat():
                try:
                    value = await fn(*args, **kwargs)
                except BaseException as error:
                    await step_run.failed(error)
                    raise
            await step_run.succeeded(value)
            return value

        return run

    async def __aenter__(self) -> StepHandle:
        key, run_id, target, payload = self._block_identity()
        step_run = _AsyncRun(self, key, run_id, payload, target)
        began = await step_run.begin()
        handle = StepHandle(key, began is _RUN, None if began is _RUN else began)
        beat: _AsyncHeartbeat | None = None
        if handle.should_run:
            beat = step_run.heartbeat()
            await beat.__aenter__()
        entry = (step_run if handle.should_run else None, beat, handle)
        self._open.set((*self._open.get(), entry))
        return handle

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        opened = self._open.get()
        if not opened:
            return
        (step_run, beat, handle), rest = opened[-1], opened[:-1]
        self._open.set(rest)
        if step_run is None:
            return
        if beat is not None:
            await beat.__aexit__(kind, error, tb)
        if error is not None:
            await step_run.failed(error)
        else:
            await step_run.succeeded(handle.result)


class _AsyncRun:
    """One delivery of a step on the asyncio ledger: claim, then record what the body did."""

    def __init__(
        self, step: AsyncStep, key: str, run_id: str, payload: Any, target: str = ""
    ) -> None:
        self.step = step
        self.key = key
        self.run_id = run_id
        self.payload = payload
        self.target = target
        self.token = 0
        self.lost: IdempoError | None = None
        self.unreachable: IdempoError | None = None

    async def begin(self) -> Any:
        """``_RUN`` when the body is to run; otherwise what the call answers instead."""
        s = self.step
        backoff = _Backoff(s._deadline_s)
        while True:
            outcome = await s._ledger.claim(
                self.key,
                self.payload,
                fingerprint_fields=s._fields,
                tool_kind=s.tool_kind,
                run_id=self.run_id,
                step_id=s.step_id,
                target=self.target,
                lease_ms=s._lease_ms,
            )
            answer = s._settle(self.key, outcome, backoff.left())
            if not isinstance(answer, _Wait):
                if isinstance(outcome, Claimed):
                    self.token = outcome.token
                return answer
            now_ms = await s._ledger.now_ms() if answer.until_ms is not None else 0
            await asyncio.sleep(backoff.pause(answer, now_ms))

    def heartbeat(self) -> _AsyncHeartbeat:
        return _AsyncHeartbeat(self)

    async def succeeded(self, value: Any) -> None:
        try:
            await self.step._ledger.complete(self.key, self.token, value)
        except IdempoError as error:
            _note_lost(error, self.lost)
            if error.code == "invalid_json":
                # The effect happened but its result cannot be recorded: never run it blindly again.
                await self.step._ledger.fail(self.key, self.token, "unknown_outcome", str(error))
            raise

    async def failed(self, error: BaseException) -> None:
        """Records the body's exception; the caller re-raises it, noted if it went unrecorded."""
        found = self.step._errors.classify(error, self.step.tool_kind)
        try:
            await self.step._ledger.fail(
                self.key,
                self.token,
                found.error_class,
                _detail(error),
                retry_after_ms=found.retry_after_ms,
            )
        except IdempoError as refused:
            _note_unrecorded(error, refused)


class _AsyncHeartbeat:
    """Extends the lease every third of it while the body runs: a timer on the event loop's own
    heap, which starts a beat only once the body outlives a third of the lease. On the same loop,
    so a body that blocks the loop (instead of awaiting) starves it, and the lease may lapse."""

    __slots__ = ("_done", "_run", "_task", "_timer")

    def __init__(self, run: _AsyncRun) -> None:
        self._run = run
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._done = False

    def _schedule(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(
            self._run.step._lease_ms / 3000, self._due
        )

    def _due(self) -> None:
        self._timer = None
        self._task = asyncio.create_task(self._beat(), name=f"heartbeat {self._run.key}")

    async def _beat(self) -> None:
        run = self._run
        step = run.step
        ledger = step._ledger
        interval = step._lease_ms / 3000
        statement = ledger._heartbeat(run.key, run.token, step._lease_ms)
        delay = interval
        try:
            try:
                await ledger._do(statement, timeout=interval / 2)
            except LedgerUnavailable:
                await ledger._direct(statement, interval)
            run.unreachable = None
        except LedgerUnavailable as error:
            # Out of reach, not lost: try again soon, until the ledger answers.
            run.unreachable = error
            delay = min(interval, _RETRY_UNREACHABLE_S)
        except IdempoError as error:
            # A lost lease ends the beat; the record after the body is refused as stale.
            run.lost = error
            return
        finally:
            self._task = None
        if not self._done:
            self._timer = asyncio.get_running_loop().call_later(delay, self._due)

    async def __aenter__(self) -> _AsyncHeartbeat:
        self._schedule()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

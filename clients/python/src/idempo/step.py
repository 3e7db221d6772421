"""Step middleware: a step of a run runs once, its result or terminal error recorded and replayed.

``@ledger.step("charge", target_arg="order_id")`` decorates a function whose ``run_id`` argument
names the run; the key is ``run_id:step_id[:target]``. ``with ledger.step("charge", run_id=...,
payload=...) as step`` does the same around a block. The ledger decides every answer; this module
only turns the answers into a call, a replay, an exception or a pending marker.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from idempo.errors import IdempoError
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    ClaimOutcome,
    InProgress,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    Replayed,
    RetryLater,
)

if TYPE_CHECKING:
    from idempo.ledger import Ledger

__all__ = [
    "DEFAULT_ERRORS",
    "Classified",
    "ErrorMap",
    "OnPending",
    "Pending",
    "Step",
    "StepConflict",
    "StepFailed",
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


def _retry_after_ms(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or getattr(error, "headers", None)
    value = headers.get("Retry-After") if isinstance(headers, Mapping) else None
    if value is None:
        value = getattr(error, "retry_after", None)
    try:
        return max(0, int(float(value) * 1000)) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: the ledger's backoff applies


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


class Step:
    """One step of a run, bound to a ``Ledger``: a decorator or a context manager."""

    def __init__(
        self,
        ledger: Ledger,
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
        self._ledger = ledger
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
        self._run: _Run | None = None
        self._beat: _Heartbeat | None = None
        self._handle = StepHandle("", False, None)

    # --- the decorator ---------------------------------------------------------------------

    def _call_identity(
        self, fn: Callable[..., Any], args: Any, kwargs: Any
    ) -> tuple[str, str, Any]:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        if self._key_fn is not None:
            key = self._key_fn(*args, **kwargs)
            run_id = key.split(":", 1)[0]
        else:
            run_id = self._run_id or str(values[self._run_id_arg])
            target = self._target or (str(values[self._target_arg]) if self._target_arg else "")
            key = f"{run_id}:{self.step_id}" + (f":{target}" if target else "")
        payload = self._payload_of(*args, **kwargs) if self._payload_of else values
        return key, run_id, payload

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                key, run_id, payload = self._call_identity(fn, args, kwargs)
                run = _Run(self, key, run_id, payload)
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
            key, run_id, payload = self._call_identity(fn, args, kwargs)
            run = _Run(self, key, run_id, payload)
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
        if self._run_id is None:
            raise TypeError("a step used with 'with' needs run_id=")
        key = f"{self._run_id}:{self.step_id}" + (f":{self._target}" if self._target else "")
        run = _Run(self, key, self._run_id, self._payload)
        began = run.begin()
        handle = StepHandle(key, began is _RUN, None if began is _RUN else began)
        if handle.should_run:
            self._run = run
            self._beat = run.heartbeat()
            self._beat.__enter__()
        self._handle = handle
        return handle

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run, self._run = self._run, None
        if run is None:
            return
        if self._beat is not None:
            self._beat.__exit__(kind, error, tb)
        if error is not None:
            run.failed(error)
        else:
            run.succeeded(self._handle.result)


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


class _Run:
    """One delivery of a step: claim, then record what the body did."""

    def __init__(self, step: Step, key: str, run_id: str, payload: Any) -> None:
        self.step = step
        self.key = key
        self.run_id = run_id
        self.payload = payload
        self.token = 0
        self.lost: IdempoError | None = None

    def _claim(self) -> ClaimOutcome:
        s = self.step
        return s._ledger.claim(
            self.key,
            self.payload,
            fingerprint_fields=s._fields,
            tool_kind=s.tool_kind,
            run_id=self.run_id,
            step_id=s.step_id,
            lease_ms=s._lease_ms,
        )

    def begin(self) -> Any:
        """``_RUN`` when the body is to run; otherwise what the call answers instead."""
        deadline = time.monotonic() + self.step._deadline_s
        pause = 0.05
        while True:
            outcome = self._claim()
            if isinstance(outcome, Claimed):
                self.token = outcome.token
                return _RUN
            if isinstance(outcome, Replayed):
                if outcome.error is not None:
                    raise StepFailed(self.key, outcome.error.error_class, outcome.error.detail)
                return outcome.result
            if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
                raise StepConflict(self.key, outcome)
            assert isinstance(
                outcome, InProgress | RetryLater | ReconcileRequired | BudgetExhausted
            )
            policy = self.step._on_pending
            if policy is OnPending.RETURN:
                return Pending(self.key, outcome)
            left = deadline - time.monotonic()
            if policy is OnPending.RAISE or left <= 0:
                raise StepPending(self.key, outcome)
            if isinstance(outcome, RetryLater):
                wait = (outcome.at - self.step._ledger.now_ms()) / 1000
                time.sleep(min(max(wait, 0.01), left))
            else:
                time.sleep(min(pause, left))
                pause = min(pause * 2, 1.0)

    def heartbeat(self) -> _Heartbeat:
        return _Heartbeat(self)

    def succeeded(self, value: Any) -> None:
        try:
            self.step._ledger.complete(self.key, self.token, value)
        except IdempoError as error:
            if error.code == "invalid_json":
                # The effect happened but its result cannot be recorded: never run it blindly again.
                self.step._ledger.fail(self.key, self.token, "unknown_outcome", str(error))
            raise

    def failed(self, error: BaseException) -> None:
        """Records the body's exception; the caller re-raises it, noted if it went unrecorded."""
        found = self.step._errors.classify(error, self.step.tool_kind)
        try:
            self.step._ledger.fail(
                self.key,
                self.token,
                found.error_class,
                _detail(error),
                retry_after_ms=found.retry_after_ms,
            )
        except IdempoError as refused:
            error.add_note(f"idempo: the failure was not recorded: {refused.code}: {refused}")


class _Heartbeat:
    """Extends the lease every third of it while the body runs (a thread: the body may block)."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat {run.key}")

    def _beat(self) -> None:
        step = self._run.step
        while not self._stop.wait(step._lease_ms / 3000):
            try:
                step._ledger.heartbeat(self._run.key, self._run.token, lease_ms=step._lease_ms)
            except IdempoError as error:
                # A lost lease ends the beat; the record after the body is refused as stale.
                self._run.lost = error
                return

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

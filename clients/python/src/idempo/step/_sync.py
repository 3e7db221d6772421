"""The step on the sync ledger: ``Step``, its delivery and its heartbeat on the ledger's heartbeat
thread. An ``async def`` body it decorates goes through the asyncio wrapper, the ledger's calls
each in a thread."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from idempo._heartbeat import Beat
from idempo.errors import IdempoError, LedgerUnavailable
from idempo.outcomes import Operation
from idempo.step._aio import guard_coroutine
from idempo.step._answers import RUN, Backoff, StepHandle, Wait, handle_of
from idempo.step._blocks import OpenBlocks
from idempo.step._keys import StepOptions
from idempo.step._run import RunState, note_lost

if TYPE_CHECKING:
    from idempo.ledger import Ledger

P = ParamSpec("P")
R = TypeVar("R")


class Step(StepOptions):
    """One step of a run, bound to a ``Ledger``: a decorator or a context manager."""

    def __init__(self, ledger: Ledger, step_id: str, **options: Any) -> None:
        super().__init__(step_id, **options)
        self._ledger = ledger
        self._open: OpenBlocks[tuple[Run | None, Heartbeat | None, StepHandle]] = OpenBlocks(
            f"idempo-step-{step_id}"
        )

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(fn):
            guarded = guard_coroutine(self, fn, self._threaded_delivery)
            return cast(Callable[P, R], guarded)
        return self._guard_function(fn)

    def _delivery(self, key: str, run_id: str, target: str, payload: Any) -> Run:
        return Run(self, key, run_id, payload, target)

    def _threaded_delivery(self, key: str, run_id: str, target: str, payload: Any) -> _InThreads:
        return _InThreads(self._delivery(key, run_id, target, payload))

    def _guard_function(self, fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn)
        self._check_signature(signature)

        @functools.wraps(fn)
        def run_sync(*args: P.args, **kwargs: P.kwargs) -> R:
            run = self._delivery(*self._call_identity(signature, args, kwargs))
            began = run.begin()
            if began is not RUN:
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
        run = self._delivery(*self._block_identity())
        handle = handle_of(run.key, run.begin())
        beat: Heartbeat | None = None
        if handle.should_run:
            beat = run.heartbeat()
            beat.__enter__()
        self._open.push((run if handle.should_run else None, beat, handle))
        return handle

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        opened = self._open.pop()
        if opened is None:
            return
        run, beat, handle = opened
        if run is None:
            return
        if beat is not None:
            beat.__exit__(kind, error, tb)
        if error is not None:
            run.failed(error)
        else:
            run.succeeded(handle.result)


class Run(RunState[Step]):
    """One delivery of a step: claim, then record what the body did."""

    def begin(self) -> Any:
        """``RUN`` when the body is to run; otherwise what the call answers instead."""
        ledger = self.step._ledger
        backoff = Backoff(self.step._deadline_s)
        while True:
            outcome = ledger.claim(self.key, self.payload, **self.claim_options())
            answer = self.answer(outcome, backoff)
            if not isinstance(answer, Wait):
                return answer
            now_ms = ledger.now_ms() if answer.until_ms is not None else 0
            time.sleep(backoff.pause(answer, now_ms))

    def heartbeat(self) -> Heartbeat:
        return Heartbeat(self)

    def succeeded(self, value: Any) -> None:
        try:
            self.step._ledger.complete(self.key, self.token, value)
        except IdempoError as error:
            note_lost(error, self.lost)
            if error.code == "invalid_json":
                # The effect happened but its result cannot be recorded: never run it blindly again.
                self.step._ledger.fail(self.key, self.token, "unknown_outcome", str(error))
            raise

    def failed(self, error: BaseException) -> Operation | None:
        """Records the body's exception; the caller re-raises it, noted if it went unrecorded.
        The record, or None when the ledger refused it."""
        found, detail = self.failure(error)
        try:
            return self.step._ledger.fail(
                self.key,
                self.token,
                found.error_class,
                detail,
                retry_after_ms=found.retry_after_ms,
            )
        except IdempoError as refused:
            self.unrecorded(error, refused)
            return None


class Heartbeat:
    """Extends the lease every third of it while the body runs: a beat on the ledger's heartbeat
    thread (the body may block), sent only once the body outlives a third of the lease."""

    __slots__ = ("_beat", "_run")

    def __init__(self, run: Run) -> None:
        self._run = run
        self._beat: Beat | None = None

    def _send(self) -> bool | float:
        run = self._run
        ledger = run.step._ledger
        statement = ledger._heartbeat(run.key, run.token, run.step._lease_ms)
        try:
            try:
                # The pool's wait is bounded: a connection it cannot hand out soon is not waited
                # for while the lease runs out.
                ledger._do(statement, timeout=run.beat_interval / 2)
            except LedgerUnavailable:
                # The pool reconnects with a backoff of seconds after an outage: one connection
                # of its own, at once.
                ledger._direct(statement, run.beat_interval)
        except IdempoError as error:
            return run.after_beat(error)
        return run.after_beat(None)

    def __enter__(self) -> Heartbeat:
        self._beat = self._run.step._ledger._heartbeats.start(self._run.beat_interval, self._send)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._beat is not None:
            self._run.step._ledger._heartbeats.cancel(self._beat)


class _InThreads:
    """A sync delivery driven from an ``async def`` body: each ledger call in a thread, the
    heartbeat on the ledger's heartbeat thread."""

    __slots__ = ("_run",)

    def __init__(self, run: Run) -> None:
        self._run = run

    async def begin(self) -> Any:
        return await asyncio.to_thread(self._run.begin)

    def heartbeat(self) -> _HeartbeatAround:
        return _HeartbeatAround(self._run.heartbeat())

    async def failed(self, error: BaseException) -> Operation | None:
        return await asyncio.to_thread(self._run.failed, error)

    async def succeeded(self, value: Any) -> None:
        await asyncio.to_thread(self._run.succeeded, value)


class _HeartbeatAround:
    """The sync heartbeat around an ``async def`` body, entered and left on the event loop as a
    plain ``with`` would."""

    __slots__ = ("_beat",)

    def __init__(self, beat: Heartbeat) -> None:
        self._beat = beat

    async def __aenter__(self) -> Heartbeat:
        return self._beat.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._beat.__exit__(kind, error, tb)

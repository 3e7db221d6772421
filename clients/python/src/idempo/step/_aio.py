"""The step on the asyncio ledger: ``AsyncStep``, its delivery and its heartbeat on the event
loop; and the wrapper of ``async def`` functions, which ``Step`` uses too."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, cast

from idempo.errors import IdempoError, LedgerUnavailable
from idempo.outcomes import Operation
from idempo.step._answers import RUN, Backoff, StepHandle, Wait, handle_of
from idempo.step._blocks import OpenBlocks
from idempo.step._keys import StepOptions
from idempo.step._run import RunState, note_lost

if TYPE_CHECKING:
    from idempo.aio import AsyncLedger

P = ParamSpec("P")
R = TypeVar("R")


class AsyncRunner(Protocol):
    """One delivery of a step, as an ``async def`` body's wrapper drives it."""

    async def begin(self) -> Any: ...

    def heartbeat(self) -> AbstractAsyncContextManager[Any]: ...

    async def failed(self, error: BaseException) -> Operation | None: ...

    async def succeeded(self, value: Any) -> None: ...


def guard_coroutine(
    step: StepOptions,
    fn: Callable[P, Coroutine[Any, Any, R]],
    runner: Callable[[str, str, str, Any], AsyncRunner],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """``fn`` run once per key: claimed, its lease kept while it runs, its answer recorded;
    ``runner(key, run_id, target, payload)`` makes each call's delivery."""
    signature = inspect.signature(fn)
    step._check_signature(signature)

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        step_run = runner(*step._call_identity(signature, args, kwargs))
        began = await step_run.begin()
        if began is not RUN:
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


class AsyncStep(StepOptions):
    """One step of a run, bound to an ``AsyncLedger``: a decorator of ``async def`` functions or
    an ``async with`` block; the same options and answers as :class:`Step`."""

    def __init__(self, ledger: AsyncLedger, step_id: str, **options: Any) -> None:
        super().__init__(step_id, **options)
        self._ledger = ledger
        self._open: OpenBlocks[tuple[AsyncRun | None, AsyncHeartbeat | None, StepHandle]] = (
            OpenBlocks(f"idempo-async-step-{step_id}")
        )

    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, R]]
    ) -> Callable[P, Coroutine[Any, Any, R]]:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError("AsyncLedger.step decorates async functions; Ledger.step the others")
        return guard_coroutine(self, fn, self._delivery)

    def _delivery(self, key: str, run_id: str, target: str, payload: Any) -> AsyncRun:
        return AsyncRun(self, key, run_id, payload, target)

    async def __aenter__(self) -> StepHandle:
        step_run = self._delivery(*self._block_identity())
        handle = handle_of(step_run.key, await step_run.begin())
        beat: AsyncHeartbeat | None = None
        if handle.should_run:
            beat = step_run.heartbeat()
            await beat.__aenter__()
        self._open.push((step_run if handle.should_run else None, beat, handle))
        return handle

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        opened = self._open.pop()
        if opened is None:
            return
        step_run, beat, handle = opened
        if step_run is None:
            return
        if beat is not None:
            await beat.__aexit__(kind, error, tb)
        if error is not None:
            await step_run.failed(error)
        else:
            await step_run.succeeded(handle.result)


class AsyncRun(RunState[AsyncStep]):
    """One delivery of a step on the asyncio ledger: claim, then record what the body did."""

    async def begin(self) -> Any:
        """``RUN`` when the body is to run; otherwise what the call answers instead."""
        ledger = self.step._ledger
        backoff = Backoff(self.step._deadline_s)
        while True:
            outcome = await ledger.claim(self.key, self.payload, **self.claim_options())
            answer = self.answer(outcome, backoff)
            if not isinstance(answer, Wait):
                return answer
            now_ms = await ledger.now_ms() if answer.until_ms is not None else 0
            await asyncio.sleep(backoff.pause(answer, now_ms))

    def heartbeat(self) -> AsyncHeartbeat:
        return AsyncHeartbeat(self)

    async def succeeded(self, value: Any) -> None:
        try:
            await self.step._ledger.complete(self.key, self.token, value)
        except IdempoError as error:
            note_lost(error, self.lost)
            if error.code == "invalid_json":
                # The effect happened but its result cannot be recorded: never run it blindly again.
                await self.step._ledger.fail(self.key, self.token, "unknown_outcome", str(error))
            raise

    async def failed(self, error: BaseException) -> Operation | None:
        """Records the body's exception; the caller re-raises it, noted if it went unrecorded.
        The record, or None when the ledger refused it."""
        found, detail = self.failure(error)
        try:
            return await self.step._ledger.fail(
                self.key,
                self.token,
                found.error_class,
                detail,
                retry_after_ms=found.retry_after_ms,
            )
        except IdempoError as refused:
            self.unrecorded(error, refused)
            return None


class AsyncHeartbeat:
    """Extends the lease every third of it while the body runs: a timer on the event loop's own
    heap, which starts a beat only once the body outlives a third of the lease. On the same loop,
    so a body that blocks the loop (instead of awaiting) starves it, and the lease may lapse."""

    __slots__ = ("_done", "_run", "_task", "_timer")

    def __init__(self, run: AsyncRun) -> None:
        self._run = run
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._done = False

    def _schedule(self, delay: float) -> None:
        self._timer = asyncio.get_running_loop().call_later(delay, self._due)

    def _due(self) -> None:
        self._timer = None
        self._task = asyncio.create_task(self._beat(), name=f"heartbeat {self._run.key}")

    async def _beat(self) -> None:
        run = self._run
        ledger = run.step._ledger
        statement = ledger._heartbeat(run.key, run.token, run.step._lease_ms)
        try:
            try:
                try:
                    await ledger._do(statement, timeout=run.beat_interval / 2)
                except LedgerUnavailable:
                    await ledger._direct(statement, run.beat_interval)
            except IdempoError as error:
                again = run.after_beat(error)
            else:
                again = run.after_beat(None)
        finally:
            self._task = None
        if again is False:
            return
        if not self._done:
            self._schedule(run.beat_interval if again is True else again)

    async def __aenter__(self) -> AsyncHeartbeat:
        self._schedule(self._run.beat_interval)
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

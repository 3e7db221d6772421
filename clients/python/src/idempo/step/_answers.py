"""What a step answers instead of running its body, and how a claim's outcome maps to it: the
recorded result, a recorded error or a conflict raised, a pending answer raised, returned or
waited out. No I/O: both the sync and the asyncio step use it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

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


@dataclass(slots=True)
class StepHandle:
    """What ``with ledger.step(...)`` gives the block: run when ``should_run``, then set
    ``result``; otherwise ``result`` is the recorded one (or a Pending marker)."""

    key: str
    should_run: bool
    result: Any


class Running:
    pass


RUN = Running()
"""The answer that lets the body run (the claim was ``Claimed``)."""


def handle_of(key: str, began: Any) -> StepHandle:
    """The handle of a ``with`` block whose claim answered ``began``."""
    return StepHandle(key, began is RUN, None if began is RUN else began)


@dataclass(frozen=True, slots=True)
class Wait:
    """Claim again later: at ``until_ms`` on the ledger's clock (RetryLater), or after a backoff."""

    until_ms: int | None


def settle(key: str, outcome: ClaimOutcome, on_pending: OnPending, left: float) -> Any:
    """What a claim's answer means for the call: ``RUN``, the value it answers instead, or a
    ``Wait``; raises for a recorded error, a conflict or a pending answer under RAISE (or once
    no time is ``left`` to wait)."""
    if isinstance(outcome, Claimed):
        return RUN
    if isinstance(outcome, Replayed):
        if outcome.error is not None:
            raise StepFailed(key, outcome.error.error_class, outcome.error.detail)
        return outcome.result
    if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
        raise StepConflict(key, outcome)
    assert isinstance(outcome, InProgress | RetryLater | ReconcileRequired | BudgetExhausted)
    if on_pending is OnPending.RETURN:
        return Pending(key, outcome)
    if on_pending is OnPending.RAISE or left <= 0:
        raise StepPending(key, outcome)
    return Wait(outcome.at if isinstance(outcome, RetryLater) else None)


class Backoff:
    """The pending policy's waits until the deadline: a RetryLater's time, else 50 ms to 1 s."""

    def __init__(self, deadline_s: float) -> None:
        self._deadline = time.monotonic() + deadline_s
        self._pause = 0.05

    def left(self) -> float:
        return self._deadline - time.monotonic()

    def pause(self, wait: Wait, now_ms: int) -> float:
        left = self.left()
        if wait.until_ms is not None:
            return min(max((wait.until_ms - now_ms) / 1000, 0.01), left)
        pause, self._pause = self._pause, min(self._pause * 2, 1.0)
        return min(pause, left)

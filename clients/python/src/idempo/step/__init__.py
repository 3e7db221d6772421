"""Step middleware: a step of a run runs once, its result or terminal error recorded and replayed.

``@ledger.step("charge", target_arg="order_id")`` decorates a function whose ``run_id`` argument
names the run; the key is ``run_id:step_id[:target]``. ``with ledger.step("charge", run_id=...,
payload=...) as step`` does the same around a block. The ledger decides every answer; this module
only turns the answers into a call, a replay, an exception or a pending marker.

Its parts: ``_keys`` (the options, and each call's key and payload), ``_answers`` (a claim's
outcome as the call's answer), ``_errormap`` (how an exception is recorded), ``_run`` (what a
delivery holds and decides), ``_sync`` and ``_aio`` (the steps on the sync and asyncio ledgers).
"""

from idempo.step._aio import AsyncStep
from idempo.step._answers import (
    OnPending,
    Pending,
    StepConflict,
    StepFailed,
    StepHandle,
    StepPending,
)
from idempo.step._errormap import DEFAULT_ERRORS, Classified, ErrorMap
from idempo.step._errormap import MAX_RETRY_AFTER_MS as MAX_RETRY_AFTER_MS
from idempo.step._sync import Step

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

# Named idempo.step.X, as where they are documented: in tracebacks, reprs and pickles.
for _public in (
    AsyncStep,
    Classified,
    ErrorMap,
    OnPending,
    Pending,
    Step,
    StepConflict,
    StepFailed,
    StepHandle,
    StepPending,
):
    _public.__module__ = __name__
del _public

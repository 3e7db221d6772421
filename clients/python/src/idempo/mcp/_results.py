"""What the guard answers a tool call with when the upstream does not run it: the ``_meta``
fields of requests and results, error results, and every claim outcome but ``Claimed`` as the
caller sees it."""

from __future__ import annotations

from typing import Any

from idempo.mcp._sdk import types
from idempo.outcomes import (
    BudgetExhausted,
    ClaimOutcome,
    InProgress,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    Replayed,
    RetryLater,
)

RUN_ID_META = "idempo/run_id"
"""The request ``_meta`` field naming the agent's run (required on every guarded call)."""
STEP_ID_META = "idempo/step_id"
"""The request ``_meta`` field naming the step of the run (required on every guarded call)."""
STATUS_META = "idempo/status"
"""The result ``_meta`` field saying what the guard did: ``executed``, ``replayed``,
``conflict``, ``in_progress``, ``awaiting_approval``, ``retry_later``, ``unknown_outcome``,
``failed``, ``budget_exhausted`` or ``refused``."""
KEY_META = "idempo/key"
STATE_META = "idempo/state"


def error_result(text: str, status: str, **meta: Any) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        is_error=True,
        _meta={STATUS_META: status, **meta},
    )


def text_of(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(texts) or "the tool answered an error"


def with_meta(result: types.CallToolResult, **meta: Any) -> types.CallToolResult:
    return result.model_copy(update={"meta": {**(result.meta or {}), **meta}})


def key_meta(key: str) -> dict[str, str]:
    return {KEY_META: key}


def failed_result(name: str, key: str, operation: Operation, why: str) -> types.CallToolResult:
    state = operation.state
    if state in ("unknown_outcome", "reconciling", "confirmation_required"):
        text = (
            f"{name}: outcome unknown ({why}); the ledger holds {key!r} in {state} for "
            "reconciliation, and the same call will not run it again"
        )
        return error_result(text, "unknown_outcome", **{STATE_META: state}, **key_meta(key))
    return error_result(
        f"{name}: {why} (ledger state {state})", "failed", **{STATE_META: state}, **key_meta(key)
    )


def answer(name: str, key: str, outcome: ClaimOutcome) -> types.CallToolResult:
    """Every claim outcome but Claimed, as the caller sees it."""
    meta = {STATE_META: outcome.operation.state, **key_meta(key)}
    if isinstance(outcome, Replayed):
        return _replayed(name, key, outcome, meta)
    if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
        return error_result(
            f"{name}: conflict: {key!r} was used for other arguments; nothing was run "
            "(a new action needs a new step id)",
            "conflict",
            **meta,
        )
    if isinstance(outcome, InProgress):
        return _in_progress(name, key, outcome, meta)
    if isinstance(outcome, RetryLater):
        return error_result(
            f"{name}: the last attempt failed; the ledger allows the next at {outcome.at} ms",
            "retry_later",
            **meta,
            **{"idempo/retry_at_ms": outcome.at},
        )
    if isinstance(outcome, ReconcileRequired):
        return failed_result(
            name, key, outcome.operation, "an earlier attempt's outcome is unknown"
        )
    assert isinstance(outcome, BudgetExhausted)
    return error_result(
        f"{name}: the run is halted by its {outcome.budget} budget: {outcome.detail}",
        "budget_exhausted",
        **meta,
    )


def _replayed(name: str, key: str, outcome: Replayed, meta: dict[str, Any]) -> types.CallToolResult:
    """The recorded result, or the recorded error."""
    if outcome.error is None:
        try:
            recorded = types.CallToolResult.model_validate(outcome.result)
        except ValueError:  # pydantic's ValidationError: a record not made by a guard
            return error_result(
                f"{name}: {key!r} succeeded, but its recorded result is not a tool result",
                "failed",
                **meta,
            )
        return with_meta(recorded, **{STATUS_META: "replayed"}, **meta)
    error = outcome.error
    return error_result(
        f"{name} failed earlier ({error.error_class}): {error.detail}", "failed", **meta
    )


def _in_progress(
    name: str, key: str, outcome: InProgress, meta: dict[str, Any]
) -> types.CallToolResult:
    """Another call runs it, or an approver has yet to decide."""
    if outcome.state == "awaiting_approval":
        return error_result(
            f"{name}: awaiting approval: {key!r} runs once an approver decides in the ledger",
            "awaiting_approval",
            **meta,
        )
    return error_result(
        f"{name}: in progress: {key!r} is being run by another call ({outcome.state}); "
        "call again later for its result",
        "in_progress",
        **meta,
    )

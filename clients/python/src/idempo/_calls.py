"""The SQL both ledgers send and how they read the answers: one shape for sync and asyncio."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from idempo.canonical import Fingerprint, canonical_json
from idempo.errors import Internal, InvalidArgument
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    ClaimOutcome,
    Event,
    InProgress,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    RecordedError,
    Replayed,
    RetryLater,
    RunStatus,
)

# Arguments declared `integer` (the rest of the numbers are `bigint`): named notation needs the
# exact type to pick the function.
_INTEGER_ARGS = frozenset(
    {
        "p_max_attempts",
        "p_record_schema",
        "p_extra_attempts",
        "p_quantity",
        "p_read_ct",
        "p_max_reads",
    }
)
RECORD_SCHEMA = 1
# The engine asks a record's own projection this many times before giving up (engine.cpp).
PROJECTION_ATTEMPTS = 4


def default_owner() -> str:
    """A lease owner naming this process, as the engine's ``defaultOwner()``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _sql_type(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if name in _INTEGER_ARGS else "bigint"
    return "text"


def call(
    function: str, args: Mapping[str, object], columns: str = "*"
) -> tuple[str, dict[str, object]]:
    """``SELECT columns FROM idempo.function(p_x => …)`` for the arguments that are not None.

    Arguments left out take the function's own defaults, so the ledger keeps deciding them.
    """
    given = {name: value for name, value in args.items() if value is not None}
    named = ", ".join(
        f"{name} => %({name})s::{_sql_type(name, value)}" for name, value in given.items()
    )
    return f"SELECT {columns} FROM idempo.{function}({named}) AS r", given


def json_arg(value: Any) -> str | None:
    """A JSON argument's canonical text; None stays None (the function's default)."""
    return None if value is None else canonical_json(value)


@dataclass(frozen=True, slots=True)
class ClaimArgs:
    """A claim's arguments but the fingerprint, which a projection retry changes."""

    namespace: str
    key: str
    owner: str
    tool_kind: str
    run_id: str
    step_id: str
    target: str
    lease_ms: int | None
    max_attempts: int | None
    requires_approval: bool
    value: tuple[int, str] | None
    cost: tuple[int, str] | None
    tokens: int


def claim_call(args: ClaimArgs, fp: Fingerprint) -> tuple[str, dict[str, object]]:
    return call(
        "claim",
        {
            "p_namespace": args.namespace,
            "p_key": args.key,
            "p_payload": fp.payload,
            "p_payload_sha256": fp.payload_sha256,
            "p_owner": args.owner,
            "p_tool_kind": args.tool_kind,
            "p_lease_ms": args.lease_ms,
            "p_max_attempts": args.max_attempts,
            "p_requires_approval": args.requires_approval,
            "p_run_id": args.run_id,
            "p_step_id": args.step_id,
            "p_target": args.target,
            "p_fingerprint_fields": fp.fields_json,
            "p_fingerprint": fp.fingerprint,
            "p_value_minor": args.value[0] if args.value else None,
            "p_value_currency": args.value[1] if args.value else None,
            "p_record_schema": RECORD_SCHEMA,
            "p_cost_minor": args.cost[0] if args.cost else None,
            "p_cost_currency": args.cost[1] if args.cost else None,
            "p_tokens": args.tokens,
        },
    )


def claim_outcome(row: Mapping[str, Any], requested: tuple[str, ...]) -> ClaimOutcome | None:
    """The typed outcome of a claim's answer; None for ``projection_differs`` with no fields named
    (the caller asks again over the record's projection, as the engine does)."""
    op = Operation.from_row(row)
    outcome = row["outcome"]
    if outcome == "claimed":
        return Claimed(op.fencing_token, op.lease_expires_at_ms, op)
    if outcome == "replayed":
        if op.state == "succeeded":
            return Replayed(op.result_value(), None, op.receipt_value(), op)
        return Replayed(None, RecordedError(op.error_class or "", op.error_detail), None, op)
    if outcome == "in_progress":
        return InProgress(op.state, op)
    if outcome == "retry_later":
        return RetryLater(op.next_attempt_at_ms, op)
    if outcome == "reconcile_required":
        return ReconcileRequired(op.state, op)
    if outcome == "payload_mismatch":
        return PayloadMismatch(op.payload_fingerprint, op)
    if outcome == "budget_exhausted":
        return BudgetExhausted(
            budget=row["budget"] or "",
            used=row["budget_used"] or 0,
            limit=row["budget_limit"] or 0,
            requested=row["budget_requested"],
            currency=row["budget_currency"] or "",
            detail=row["budget_detail"] or "",
            operation=op,
        )
    if outcome == "projection_differs":
        if not requested:
            return None
        return ProjectionMismatch(op.fingerprint_fields, requested, op)
    raise Internal(f"claim answered an unknown outcome {outcome!r}")


def transition_args(
    namespace: str,
    key: str,
    token: int,
    *,
    result: Any = None,
    receipt: Any = None,
    error_class: str | None = None,
    error_detail: str | None = None,
    retry_delay_ms: int | None = None,
    retention_ms: int | None = None,
    actor: str | None = None,
    detail: str | None = None,
    to: str = "succeeded",
) -> dict[str, object]:
    return {
        "p_namespace": namespace,
        "p_key": key,
        "p_from": "dispatching",
        "p_fencing_token": token,
        "p_to": to,
        "p_actor": actor,
        "p_detail": detail,
        "p_result": json_arg(result),
        "p_receipt": json_arg(receipt),
        "p_error_class": error_class,
        "p_error_detail": error_detail,
        "p_retry_delay_ms": retry_delay_ms,
        "p_retention_ms": retention_ms,
    }


SHOW_SQL = (
    "SELECT id, namespace, operation_key, run_id, step_id, target, tool_kind, state, payload, "
    "payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner, "
    "lease_expires_at_ms, fencing_token, next_attempt_at_ms, error_class, error_detail, result, "
    "receipt, created_at_ms, updated_at_ms, retention_expires_at_ms, operation_version "
    "FROM idempo.operations WHERE namespace = %s AND operation_key = %s"
)

HISTORY_SQL = (
    "SELECT e.id, e.at_ms, e.from_state, e.to_state, e.fencing_token, e.attempt, e.actor, "
    "e.error_class, e.detail, e.login "
    "FROM idempo.operation_events AS e JOIN idempo.operations AS o ON o.id = e.operation_id "
    "WHERE o.namespace = %s AND o.operation_key = %s ORDER BY e.id"
)

RUN_SQL = (
    "SELECT namespace, run_id, state, failed_dispatches, failed_dispatch_limit, spent_minor, "
    "spend_limit_minor, currency, tokens_used, token_limit, no_progress_ms, halt_budget, "
    "halt_detail, run_version FROM idempo.runs WHERE namespace = %s AND run_id = %s"
)


def event(row: Mapping[str, Any]) -> Event:
    return Event(
        id=row["id"],
        at_ms=row["at_ms"],
        from_state=row["from_state"],
        to_state=row["to_state"],
        fencing_token=row["fencing_token"] or 0,
        attempt=row["attempt"] or 0,
        actor=row["actor"] or "",
        error_class=row["error_class"] or None,
        detail=row["detail"] or "",
        login=row["login"] or "",
    )


def run_status(row: Mapping[str, Any]) -> RunStatus:
    return RunStatus(
        namespace=row["namespace"],
        run_id=row["run_id"],
        state=row["state"],
        failed_dispatches=row["failed_dispatches"],
        failed_dispatch_limit=row["failed_dispatch_limit"],
        spent_minor=row["spent_minor"],
        spend_limit_minor=row["spend_limit_minor"],
        currency=row["currency"],
        tokens_used=row["tokens_used"],
        token_limit=row["token_limit"],
        no_progress_ms=row["no_progress_ms"],
        halt_budget=row["halt_budget"],
        halt_detail=row["halt_detail"],
        version=row["run_version"],
    )


def acks_arg(acks: Iterable[tuple[int, int]] | None) -> str | None:
    """``queue_read``'s ``p_ack``: the deliveries to acknowledge first, as JSON pairs."""
    if acks is None:
        return None
    pairs: list[list[int]] = []
    for pair in acks:
        if (
            not isinstance(pair, tuple | list)
            or len(pair) != 2
            or any(not isinstance(n, int) or isinstance(n, bool) for n in pair)
        ):
            raise InvalidArgument(f"ack must hold (msg_id, read_ct) pairs of ints, not {pair!r}")
        pairs.append([pair[0], pair[1]])
    return json.dumps(pairs)

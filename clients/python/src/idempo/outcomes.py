"""What the ledger answers: records and claim outcomes as small frozen dataclasses.

Times are milliseconds since the Unix epoch on the database server's clock, as in the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BudgetExhausted",
    "ClaimOutcome",
    "Claimed",
    "Event",
    "InProgress",
    "Message",
    "Operation",
    "PayloadMismatch",
    "ProjectionMismatch",
    "ReconcileRequired",
    "RecordedError",
    "Replayed",
    "RetryLater",
    "RunStatus",
]


def _json_or_none(text: str | None) -> Any:
    return json.loads(text) if text else None


@dataclass(frozen=True, slots=True)
class Operation:
    """One record of the ledger (``idempo.operation_answer``)."""

    id: int
    namespace: str
    key: str
    run_id: str
    step_id: str
    target: str
    tool_kind: str
    state: str
    payload: str
    payload_fingerprint: str
    fingerprint_fields: tuple[str, ...]
    attempt: int
    max_attempts: int
    lease_owner: str
    lease_expires_at_ms: int
    fencing_token: int
    next_attempt_at_ms: int
    error_class: str | None
    error_detail: str
    result: str | None
    receipt: str | None
    created_at_ms: int
    updated_at_ms: int
    retention_expires_at_ms: int
    version: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Operation:
        fields = row["fingerprint_fields"] or "[]"
        return cls(
            id=row["id"],
            namespace=row["namespace"],
            key=row["operation_key"],
            run_id=row["run_id"] or "",
            step_id=row["step_id"] or "",
            target=row["target"] or "",
            tool_kind=row["tool_kind"],
            state=row["state"],
            payload=row["payload"] or "",
            payload_fingerprint=row["payload_fingerprint"] or "",
            fingerprint_fields=tuple(json.loads(fields)),
            attempt=row["attempt"] or 0,
            max_attempts=row["max_attempts"] or 0,
            lease_owner=row["lease_owner"] or "",
            lease_expires_at_ms=row["lease_expires_at_ms"] or 0,
            fencing_token=row["fencing_token"] or 0,
            next_attempt_at_ms=row["next_attempt_at_ms"] or 0,
            error_class=row["error_class"] or None,
            error_detail=row["error_detail"] or "",
            result=row["result"] or None,
            receipt=row["receipt"] or None,
            created_at_ms=row["created_at_ms"] or 0,
            updated_at_ms=row["updated_at_ms"] or 0,
            retention_expires_at_ms=row["retention_expires_at_ms"] or 0,
            version=row["operation_version"] or 0,
        )

    def result_value(self) -> Any:
        """The recorded result as a Python value (None when there is none)."""
        return _json_or_none(self.result)

    def receipt_value(self) -> Any:
        """The recorded receipt as a Python value (None when there is none)."""
        return _json_or_none(self.receipt)


@dataclass(frozen=True, slots=True)
class RecordedError:
    """The terminal error a failed operation recorded."""

    error_class: str
    detail: str


@dataclass(frozen=True, slots=True)
class Claimed:
    """This caller holds the lease: act, then complete or fail under ``token``."""

    token: int
    lease_until: int
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Replayed:
    """The operation is final: its recorded result (succeeded) or error (failed_terminal)."""

    result: Any
    error: RecordedError | None
    receipt: Any
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class InProgress:
    """Another lease is live, or an approval or confirmation is pending: ``state`` says which."""

    state: str
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class RetryLater:
    """The last attempt failed retryably; the next may start at ``at`` (ms, server clock)."""

    at: int
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ReconcileRequired:
    """The outcome of an earlier attempt is unknown: a reconciliation decides, not a retry."""

    state: str
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class PayloadMismatch:
    """The key's record was made for another payload: a conflict; nothing changes."""

    recorded_fingerprint: str
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ProjectionMismatch:
    """The key's record fingerprints other fields than this claim names; nothing is written."""

    recorded_fields: tuple[str, ...]
    requested_fields: tuple[str, ...]
    operation: Operation = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class BudgetExhausted:
    """The run is halted by one of its budgets; it dispatches nothing until a person resumes it."""

    budget: str
    used: int
    limit: int
    requested: int | None
    currency: str
    detail: str
    operation: Operation = field(repr=False, compare=False)


ClaimOutcome = (
    Claimed
    | Replayed
    | InProgress
    | RetryLater
    | ReconcileRequired
    | PayloadMismatch
    | ProjectionMismatch
    | BudgetExhausted
)


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of an operation's history."""

    id: int
    at_ms: int
    from_state: str | None
    to_state: str
    fencing_token: int
    attempt: int
    actor: str
    error_class: str | None
    detail: str
    login: str


@dataclass(frozen=True, slots=True)
class Message:
    """One delivery of a queue message: ``(msg_id, read_ct)`` names it and no other."""

    msg_id: int
    read_ct: int
    enqueued_at_ms: int
    vt_ms: int
    message: Any
    headers: Any

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Message:
        return cls(
            msg_id=row["msg_id"],
            read_ct=row["read_ct"],
            enqueued_at_ms=row["enqueued_at_ms"] or 0,
            vt_ms=row["vt_ms"] or 0,
            message=row["message"],
            headers=row["headers"],
        )


@dataclass(frozen=True, slots=True)
class RunStatus:
    """A run's record: its state, what it used and its limits (None: no limit)."""

    namespace: str
    run_id: str
    state: str
    failed_dispatches: int
    failed_dispatch_limit: int | None
    spent_minor: int
    spend_limit_minor: int | None
    currency: str
    tokens_used: int
    token_limit: int | None
    no_progress_ms: int | None
    halt_budget: str | None
    halt_detail: str
    version: int

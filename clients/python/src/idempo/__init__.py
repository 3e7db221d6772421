"""Idempo's Python client: claims, leases, step middleware and queues over the ledger's SQL API."""

import logging

from idempo.aio import AsyncLedger
from idempo.canonical import (
    Fingerprint,
    JsonText,
    canonical_json,
    fingerprint,
    parse_json,
    project,
)
from idempo.errors import (
    IdempoError,
    IllegalTransition,
    Internal,
    InvalidArgument,
    InvalidJson,
    InvalidKey,
    LedgerBusy,
    LedgerUnavailable,
    NotFound,
    PayloadTooLarge,
    Refused,
    SchemaMismatch,
    StaleLease,
)
from idempo.ledger import Ledger
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    ClaimOutcome,
    Event,
    InProgress,
    Message,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    RecordedError,
    Replayed,
    RetryLater,
    RunStatus,
)
from idempo.step import (
    ErrorMap,
    OnPending,
    Pending,
    StepConflict,
    StepFailed,
    StepPending,
)

# The pool's warnings (a connection lost, a reconnection) reach the application's logging when it
# has set it up, and are never printed to stderr by Python's last-resort handler otherwise.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

__all__ = [
    "AsyncLedger",
    "BudgetExhausted",
    "ClaimOutcome",
    "Claimed",
    "ErrorMap",
    "Event",
    "Fingerprint",
    "IdempoError",
    "IllegalTransition",
    "InProgress",
    "Internal",
    "InvalidArgument",
    "InvalidJson",
    "InvalidKey",
    "JsonText",
    "Ledger",
    "LedgerBusy",
    "LedgerUnavailable",
    "Message",
    "NotFound",
    "OnPending",
    "Operation",
    "PayloadMismatch",
    "PayloadTooLarge",
    "Pending",
    "ProjectionMismatch",
    "ReconcileRequired",
    "RecordedError",
    "Refused",
    "Replayed",
    "RetryLater",
    "RunStatus",
    "SchemaMismatch",
    "StaleLease",
    "StepConflict",
    "StepFailed",
    "StepPending",
    "canonical_json",
    "fingerprint",
    "parse_json",
    "project",
]

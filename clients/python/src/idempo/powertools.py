"""A persistence layer for the idempotency utility of Powertools for AWS Lambda (Python).

``IdempoPersistenceLayer(ledger)`` keeps the records of ``@idempotent`` and
``@idempotent_function`` in the Idempo ledger, so they follow the ledger's rules and show in the
console. Powertools' record methods map onto the ledger's calls:

* ``_put_record`` (an INPROGRESS record) is a claim of the Powertools key with the payload hash as
  its payload; the in-progress expiry (the Lambda's remaining time) is the lease. ``Claimed`` lets
  the handler run; any record found raises ``IdempotencyItemAlreadyExistsError`` with it (COMPLETED
  for a recorded result, INPROGRESS for a live lease, a wait, an approval or a reconciliation),
  and a payload the record was not made for raises ``IdempotencyValidationError``: the ledger
  compares the fingerprint on that path too.
* ``_update_record`` (COMPLETED) completes under the claim's fencing token, with the record's
  expiry (``expires_after_seconds``) as its retention: after it a claim starts a new operation
  under the same key. The ledger keeps a finished operation at least an hour (Powertools'
  default) and refuses a shorter retention.
* ``_delete_record`` (the handler raised) moves the attempt to ``failed_retryable`` with no
  delay under the same token, so the next call runs again; the history keeps the attempt.
* ``_get_record`` reads the record.

The ledger is stricter in two ways (docs/python.md): a late execution whose lease lapsed and was
taken over cannot complete or delete the taker's record (``StaleLease``, which Powertools wraps
in ``IdempotencyPersistenceLayerError``); and under ``tool_kind="protected_write"`` a lapsed
lease is not run again but goes to reconciliation, so Powertools answers it as in progress until
a person or a lookup settles it.

Import this module only with Powertools installed (``pip install 'idempo[powertools]'``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

try:
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyItemAlreadyExistsError,
        IdempotencyItemNotFoundError,
        IdempotencyValidationError,
    )
    from aws_lambda_powertools.utilities.idempotency.persistence.base import (
        BasePersistenceLayer,
    )
    from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import (
        STATUS_CONSTANTS,
        DataRecord,
    )
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError(
        "idempo.powertools needs aws-lambda-powertools: pip install 'idempo[powertools]'"
    ) from missing

from idempo._base import TOOL_KINDS
from idempo.canonical import JsonText
from idempo.errors import IdempoError, InvalidArgument, NotFound, StaleLease
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    Replayed,
)
from idempo.step import StepFailed, StepPending

if TYPE_CHECKING:
    from idempo.ledger import Ledger

__all__ = ["IdempoPersistenceLayer"]


def _now_ms() -> int:
    # Powertools states its expiries on the Lambda's clock; only their distance from now is sent,
    # and the ledger places every time on its own clock.
    return time.time_ns() // 1_000_000


class IdempoPersistenceLayer(BasePersistenceLayer):
    """Powertools' persistence layer on an Idempo ``Ledger`` (sync).

    ``tool_kind``: ``idempotent_write`` (default: a lapsed in-progress record is taken over and
    run again, as Powertools does), ``read``, or ``protected_write`` (a lapsed one goes to
    reconciliation instead). ``lease_ms``: the lease when Powertools gives no in-progress expiry
    (no Lambda context registered); by default the record's expiry, as Powertools keeps such a
    record in progress until then. ``max_attempts`` is the claim's, for the ledger's count.
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        tool_kind: str = "idempotent_write",
        lease_ms: int | None = None,
        max_attempts: int | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Powertools leaves it untyped
        if tool_kind not in TOOL_KINDS:
            raise InvalidArgument(f"tool_kind must be one of {', '.join(TOOL_KINDS)}")
        self.ledger = ledger
        self.tool_kind = tool_kind
        self.lease_ms = lease_ms
        self.max_attempts = max_attempts
        # The fencing token each key's claim got, per thread: Powertools runs put, the handler and
        # update or delete on the caller's thread.
        self._held = threading.local()

    def _tokens(self) -> dict[str, int]:
        tokens: dict[str, int] | None = getattr(self._held, "tokens", None)
        if tokens is None:
            tokens = self._held.tokens = {}
        return tokens

    def _take_token(self, key: str) -> int:
        token = self._tokens().pop(key, None)
        if token is None:
            raise StaleLease(f"no lease on '{key}' is held by this execution")
        return token

    # --- what the ledger holds, as Powertools' records -----------------------------------------

    @staticmethod
    def _payload_hash(op: Operation) -> str:
        try:
            value = json.loads(op.payload) if op.payload else {}
        except ValueError:
            return ""
        found = value.get("payload_hash", "") if isinstance(value, dict) else ""
        return found if isinstance(found, str) else ""

    def _record(self, op: Operation) -> DataRecord:
        """The record of an operation. Its times are the ledger's; a record the ledger holds in
        progress carries no in-progress expiry, so Powertools never judges a lease by its clock."""
        if op.state == "succeeded":
            return DataRecord(
                idempotency_key=op.key,
                status=STATUS_CONSTANTS["COMPLETED"],
                expiry_timestamp=(op.retention_expires_at_ms // 1000) or None,
                response_data=op.result or "",
                payload_hash=self._payload_hash(op),
            )
        return DataRecord(
            idempotency_key=op.key,
            status=STATUS_CONSTANTS["INPROGRESS"],
            payload_hash=self._payload_hash(op),
        )

    # --- Powertools' record methods --------------------------------------------------------------

    def _get_record(self, idempotency_key: str) -> DataRecord:
        try:
            op = self.ledger.show(idempotency_key)
        except NotFound as absent:
            raise IdempotencyItemNotFoundError(str(absent)) from absent
        if op.state == "failed_retryable":
            # The record Powertools deleted after the handler raised: the next call runs again.
            raise IdempotencyItemNotFoundError(f"'{idempotency_key}' failed and runs again")
        if op.state == "failed_terminal":
            raise StepFailed(idempotency_key, op.error_class or "", op.error_detail)
        return self._record(op)

    def _put_record(self, data_record: DataRecord) -> None:
        key = data_record.idempotency_key
        now_ms = _now_ms()
        if data_record.in_progress_expiry_timestamp is not None:
            lease_ms = data_record.in_progress_expiry_timestamp - now_ms
        elif self.lease_ms is not None:
            lease_ms = self.lease_ms
        else:
            lease_ms = (data_record.expiry_timestamp or 0) * 1000 - now_ms
        outcome = self.ledger.claim(
            key,
            {"payload_hash": data_record.payload_hash},
            tool_kind=self.tool_kind,
            step_id=self.function_name[:255],
            lease_ms=max(1, lease_ms),
            max_attempts=self.max_attempts,
        )
        if isinstance(outcome, Claimed):
            self._tokens()[key] = outcome.token
            return
        if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
            raise IdempotencyValidationError(
                "Payload does not match stored record for this event key",
                f"the ledger answered {type(outcome).__name__}",
            )
        if isinstance(outcome, Replayed) and outcome.error is not None:
            raise StepFailed(key, outcome.error.error_class, outcome.error.detail)
        if isinstance(outcome, BudgetExhausted):
            raise StepPending(key, outcome)
        # Replayed with a result, or held: in progress, waiting to retry, awaiting a person or a
        # reconciliation.
        old = self._record(outcome.operation)
        self._save_to_cache(data_record=old)
        raise IdempotencyItemAlreadyExistsError(old_data_record=old)

    def _update_record(self, data_record: DataRecord) -> None:
        key = data_record.idempotency_key
        token = self._take_token(key)
        result = JsonText(data_record.response_data) if data_record.response_data else None
        # The record's expiry as a retention counted by the ledger from the completion; one
        # shorter than the ledger keeps a finished operation is refused there (docs/python.md).
        retention_ms = self.expires_after_seconds * 1000
        self.ledger.complete(key, token, result, retention_ms=retention_ms)

    def delete_record(self, data: dict[str, Any], exception: Exception) -> None:
        # The handler's exception, kept for the history of the attempt ``_delete_record`` ends.
        self._held.exception = exception
        try:
            super().delete_record(data, exception)
        except IdempoError as refused:
            refused.add_note(f"the handler raised {type(exception).__name__}: {exception}")
            raise
        finally:
            self._held.exception = None

    def _delete_record(self, data_record: DataRecord) -> None:
        key = data_record.idempotency_key
        token = self._take_token(key)
        error = getattr(self._held, "exception", None)
        detail = f"{type(error).__name__}: {error}"[:4000] if error is not None else "deleted"
        self.ledger.transition(
            key,
            token,
            "failed_retryable",
            error_class="transient",
            error_detail=detail,
            retry_delay_ms=0,
            detail="the handler raised; Powertools deleted the record",
        )

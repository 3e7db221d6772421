"""An idempotent queue consumer: envelopes (docs/envelope.md) claimed by their key.

Per delivery: read, claim the envelope's ``idempotency_key`` with its ``payload``, run the handler
only on ``Claimed``, record the result and send the next step's envelope in one transaction
(``transition_and_send``), acknowledge last. A crash at any point leaves a delivery that comes
back and is answered from the ledger, so the handler's effect never happens twice.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from idempo._heartbeat import Beat
from idempo.errors import (
    IdempoError,
    IllegalTransition,
    InvalidArgument,
    LedgerUnavailable,
    NotFound,
    StaleLease,
)
from idempo.ledger import Ledger
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    Message,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    Replayed,
    RetryLater,
)
from idempo.step import DEFAULT_ERRORS, ErrorMap, Step
from idempo.step._run import note_lost
from idempo.step._sync import Heartbeat, Run

__all__ = ["Consumer", "Envelope", "Next"]

_log = logging.getLogger("idempo.consumer")

# The points a crash may fall on, in order; ``checkpoint`` is called at each.
CRASH_POINTS = ("before_claim", "after_effect", "after_record", "before_ack")


_INT64_MAX = 2**63 - 1


def _produced_at(value: Any) -> int | None:
    """produced_at as the engine reads it: an integer, or a number with no fractional part, from
    0 to 2^63 - 1; None for anything else."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if 0 <= value <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Envelope:
    """One step of a run carried by a message (docs/envelope.md)."""

    run_id: str
    step_id: str
    source_agent: str
    target_agent: str
    payload: Any
    produced_at: int
    idempotency_key: str

    @classmethod
    def from_message(cls, message: Any) -> Envelope | None:
        """The envelope a message holds; None when it is not one (it is archived, never run).

        Only the members' presence and types are read here; the key's rules are the claim's.
        """
        if not isinstance(message, Mapping):
            return None
        texts = ("run_id", "step_id", "source_agent", "target_agent", "idempotency_key")
        if any(not isinstance(message.get(name), str) for name in texts):
            return None
        produced = _produced_at(message.get("produced_at"))
        if produced is None or "payload" not in message:
            return None
        if not message["run_id"] or not message["step_id"]:
            return None
        return cls(
            message["run_id"],
            message["step_id"],
            message["source_agent"],
            message["target_agent"],
            message["payload"],
            produced,
            message["idempotency_key"],
        )

    def __post_init__(self) -> None:
        # The engine's rules (services/core/queueenvelope.cpp): a Next never sends an envelope
        # its consumers would refuse.
        texts = ("run_id", "step_id", "source_agent", "target_agent", "idempotency_key")
        for name in texts:
            if not isinstance(getattr(self, name), str):
                raise InvalidArgument(f"envelope {name} must be a string")
        if not self.run_id:
            raise InvalidArgument("envelope run_id is empty")
        if not self.step_id:
            raise InvalidArgument("envelope step_id is empty")
        produced = self.produced_at
        if isinstance(produced, bool) or not isinstance(produced, int):
            raise InvalidArgument(
                "envelope produced_at must be an integer (milliseconds since the epoch)"
            )
        if produced < 0:
            raise InvalidArgument("envelope produced_at is negative")
        if produced > _INT64_MAX:
            raise InvalidArgument("envelope produced_at is beyond the largest time it can hold")

    def as_message(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "step_id": self.step_id,
            "source_agent": self.source_agent,
            "target_agent": self.target_agent,
            "payload": self.payload,
            "produced_at": self.produced_at,
            "idempotency_key": self.idempotency_key,
        }


@dataclass(frozen=True, slots=True)
class Next:
    """A handler's answer that hands the run on: ``result`` recorded, ``envelope`` sent to
    ``queue`` in the same transaction."""

    result: Any
    queue: str
    envelope: Envelope


Handler = Callable[[Envelope], Any]


class Consumer:
    """Consumes one queue's envelopes with ``handler``; returns a ``Next`` to send the next step."""

    def __init__(
        self,
        ledger: Ledger,
        queue: str,
        handler: Handler,
        *,
        tool_kind: str = "protected_write",
        vt_ms: int = 30_000,
        lease_ms: int = 30_000,
        errors: ErrorMap = DEFAULT_ERRORS,
        checkpoint: Callable[[str], None] | None = None,
    ) -> None:
        self._ledger = ledger
        self._queue = queue
        self._handler = handler
        self._step = Step(ledger, "", tool_kind=tool_kind, lease_ms=lease_ms, errors=errors)
        self._vt_ms = vt_ms
        # Fault injection and tests: called at each of CRASH_POINTS.
        self._checkpoint = checkpoint or (lambda point: None)

    def process_one(self) -> bool:
        """Takes one delivery, if any is visible; whether there was one."""
        messages = self._ledger.read(self._queue, self._vt_ms, 1)
        if not messages:
            return False
        self._deliver(messages[0])
        return True

    def run(self, *, idle_exit_ms: int | None = None, poll_s: float = 0.2) -> None:
        """Consumes until no message came for ``idle_exit_ms`` (forever when None)."""
        idle_since = time.monotonic()
        while True:
            if self.process_one():
                idle_since = time.monotonic()
                continue
            if idle_exit_ms is not None and (time.monotonic() - idle_since) * 1000 >= idle_exit_ms:
                return
            time.sleep(poll_s)

    def _deliver(self, message: Message) -> None:
        envelope = Envelope.from_message(message.message)
        if envelope is None:
            self._ledger.archive(self._queue, message.msg_id, message.read_ct)
            return
        self._checkpoint("before_claim")
        key = envelope.idempotency_key
        run = Run(self._step, key, envelope.run_id, envelope.payload)
        try:
            outcome = self._ledger.claim(
                key,
                envelope.payload,
                tool_kind=self._step.tool_kind,
                run_id=envelope.run_id,
                step_id=envelope.step_id,
                lease_ms=self._step._lease_ms,
            )
        except LedgerUnavailable:
            raise
        except IdempoError as refused:
            # A key or payload the ledger refuses will never pass: give it to the dead letters.
            self._give_back(message, "validation", f"{refused.code}: {refused}", 0)
            return
        if isinstance(outcome, Claimed):
            run.token = outcome.token
            if not self._run_handler(run, envelope, message):
                return
        elif isinstance(outcome, RetryLater):
            delay = max(0, outcome.at - self._ledger.now_ms())
            self._give_back(message, "transient", "retry later", delay)
            return
        elif isinstance(outcome, BudgetExhausted):
            # The run is halted until an operator resumes it: the delivery comes back after its
            # visibility timeout, the reason kept for the dead-letter copy.
            detail = f"budget_exhausted: {outcome.budget}: {outcome.detail}"
            self._give_back(message, "policy_denied", detail, self._vt_ms)
            return
        elif isinstance(outcome, PayloadMismatch | ProjectionMismatch):
            # The same key for another input: a producer's bug, never run; to the dead letters.
            self._give_back(message, "validation", type(outcome).__name__, 0)
            return
        elif not isinstance(outcome, Replayed):
            # In progress elsewhere, or waiting for a person: the visibility timeout brings it
            # back; its reads count toward the dead-letter queue.
            return
        self._checkpoint("before_ack")
        try:
            self._ledger.ack(self._queue, message.msg_id, message.read_ct)
        except (StaleLease, NotFound) as refused:
            # Read again by another consumer after its visibility timeout lapsed (or gone): that
            # delivery is answered from the ledger; this one has nothing left to do.
            _log.warning("ack of message %s refused: %s: %s", message.msg_id, refused.code, refused)

    def _give_back(self, message: Message, error_class: str, detail: str, delay_ms: int) -> None:
        """Gives the delivery back, visible again after ``delay_ms``; a refusal (another consumer
        read it since) is logged, not raised."""
        try:
            self._ledger.nack(
                self._queue,
                message.msg_id,
                message.read_ct,
                error_class,
                detail[:1000],
                retry_delay_ms=delay_ms,
            )
        except (StaleLease, NotFound) as refused:
            _log.warning(
                "nack of message %s refused: %s: %s", message.msg_id, refused.code, refused
            )

    def _run_handler(self, run: Run, envelope: Envelope, message: Message) -> bool:
        """Runs the handler and records its answer; whether the delivery is done (to be acked):
        only when the outcome is final (succeeded, or a terminal failure recorded)."""
        with Heartbeat(run), _Visibility(self, message):
            try:
                answer = self._handler(envelope)
            except Exception as error:
                # Recorded, and the delivery given back for the ledger's retry time: its next
                # read is answered from the ledger (run again, or the recorded error, acked).
                return self._after_failure(run, message, error, run.failed(error))
        self._checkpoint("after_effect")
        try:
            if isinstance(answer, Next):
                if not isinstance(answer.envelope, Envelope):
                    raise InvalidArgument(
                        f"the handler's Next carries a {type(answer.envelope).__name__}, "
                        "not an Envelope"
                    )
                self._ledger.transition_and_send(
                    run.key,
                    run.token,
                    answer.queue,
                    answer.envelope.as_message(),
                    result=answer.result,
                )
            else:
                self._ledger.complete(run.key, run.token, answer)
        except (LedgerUnavailable, StaleLease, IllegalTransition) as refused:
            # Not recorded: the delivery comes back after its visibility timeout and is answered
            # from the ledger (the lease's lapse decides: run again or reconcile).
            note_lost(refused, run.lost)
            _log.warning("the answer to %r went unrecorded: %s", run.key, refused, exc_info=True)
            return False
        except IdempoError as refused:
            # The effect happened, and the handler's answer cannot be recorded (not JSON, a queue
            # that does not exist): never run blindly again.
            detail = f"the handler's answer could not be recorded: {refused.code}: {refused}"
            _log.error("%s: %s", run.key, detail)
            try:
                recorded: Operation | None = self._ledger.fail(
                    run.key, run.token, "unknown_outcome", detail[:4000]
                )
            except IdempoError as again:
                _log.warning("the failure of %r went unrecorded: %s", run.key, again)
                recorded = None
            return self._after_failure(run, message, refused, recorded)
        self._checkpoint("after_record")
        return True

    def _after_failure(
        self, run: Run, message: Message, error: BaseException, recorded: Operation | None
    ) -> bool:
        """A terminal failure recorded is final (acked); otherwise the delivery is given back,
        visible again at the ledger's retry time (or after its visibility timeout when a person
        must decide or nothing was recorded)."""
        if recorded is not None and recorded.state == "failed_terminal":
            return True
        found = self._step._errors.classify(error, run.step.tool_kind)
        delay = self._vt_ms
        if recorded is not None and recorded.state == "failed_retryable":
            try:
                delay = max(0, recorded.next_attempt_at_ms - self._ledger.now_ms())
            except LedgerUnavailable:
                delay = self._vt_ms
        error_class = recorded.error_class if recorded and recorded.error_class else None
        try:
            self._give_back(
                message, error_class or found.error_class, f"{type(error).__name__}: {error}", delay
            )
        except LedgerUnavailable as unreachable:
            _log.warning("the delivery of %r was not given back: %s", run.key, unreachable)
        return False


class _Visibility:
    """Keeps the delivery hidden from other consumers while its handler runs: the message's
    visibility timeout extended every third of it on the ledger's heartbeat thread, beside the
    lease's heartbeat."""

    __slots__ = ("_beat", "_consumer", "_message")

    def __init__(self, consumer: Consumer, message: Message) -> None:
        self._consumer = consumer
        self._message = message
        self._beat: Beat | None = None

    def _send(self) -> bool | float:
        c = self._consumer
        try:
            current = c._ledger.set_vt(c._queue, self._message.msg_id, c._vt_ms)
        except LedgerUnavailable:
            return min(c._vt_ms / 3000, 0.25)
        except IdempoError as refused:
            _log.warning("visibility of message %s not extended: %s", self._message.msg_id, refused)
            return False
        # Read again by another consumer meanwhile: its delivery is not this one's to extend.
        return current is not None and current.read_ct == self._message.read_ct

    def __enter__(self) -> _Visibility:
        c = self._consumer
        self._beat = c._ledger._heartbeats.start(c._vt_ms / 3000, self._send)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._beat is not None:
            self._consumer._ledger._heartbeats.cancel(self._beat)

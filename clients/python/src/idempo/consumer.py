"""An idempotent queue consumer: envelopes (docs/envelope.md) claimed by their key.

Per delivery: read, claim the envelope's ``idempotency_key`` with its ``payload``, run the handler
only on ``Claimed``, record the result and send the next step's envelope in one transaction
(``transition_and_send``), acknowledge last. A crash at any point leaves a delivery that comes
back and is answered from the ledger, so the handler's effect never happens twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from idempo.errors import IdempoError
from idempo.ledger import Ledger
from idempo.outcomes import Claimed, Message, Replayed, RetryLater
from idempo.step import DEFAULT_ERRORS, ErrorMap, Step, _Heartbeat, _Run

__all__ = ["Consumer", "Envelope", "Next"]

# The points a crash may fall on, in order; ``checkpoint`` is called at each.
CRASH_POINTS = ("before_claim", "after_effect", "after_record", "before_ack")


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
        produced = message.get("produced_at")
        if isinstance(produced, float) and produced.is_integer():
            produced = int(produced)
        if not isinstance(produced, int) or isinstance(produced, bool) or "payload" not in message:
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
        run = _Run(self._step, key, envelope.run_id, envelope.payload)
        try:
            outcome = self._ledger.claim(
                key,
                envelope.payload,
                tool_kind=self._step.tool_kind,
                run_id=envelope.run_id,
                step_id=envelope.step_id,
                lease_ms=self._step._lease_ms,
            )
        except IdempoError as refused:
            # A key or payload the ledger refuses will never pass: give it to the dead letters.
            self._ledger.nack(
                self._queue,
                message.msg_id,
                message.read_ct,
                "validation",
                f"{refused.code}: {refused}",
                retry_delay_ms=0,
            )
            return
        if isinstance(outcome, Claimed):
            run.token = outcome.token
            self._run_handler(run, envelope, message)
        elif isinstance(outcome, RetryLater):
            delay = max(0, outcome.at - self._ledger.now_ms())
            self._ledger.nack(
                self._queue,
                message.msg_id,
                message.read_ct,
                "transient",
                "retry later",
                retry_delay_ms=delay,
            )
            return
        elif not isinstance(outcome, Replayed):
            # In progress elsewhere, or waiting for a person: the visibility timeout brings it
            # back; its reads count toward the dead-letter queue.
            return
        self._checkpoint("before_ack")
        self._ledger.ack(self._queue, message.msg_id, message.read_ct)

    def _run_handler(self, run: _Run, envelope: Envelope, message: Message) -> None:
        with _Heartbeat(run):
            try:
                answer = self._handler(envelope)
            except Exception as error:
                # Recorded, and the delivery given back: its next read is answered from the
                # ledger (a retry after the backoff, or the recorded terminal error, then acked).
                run.failed(error)
                found = self._step._errors.classify(error, run.step.tool_kind)
                self._ledger.nack(
                    self._queue,
                    message.msg_id,
                    message.read_ct,
                    found.error_class,
                    str(error)[:1000],
                )
                return
        self._checkpoint("after_effect")
        if isinstance(answer, Next):
            self._ledger.transition_and_send(
                run.key, run.token, answer.queue, answer.envelope.as_message(), result=answer.result
            )
        else:
            run.succeeded(answer)
        self._checkpoint("after_record")

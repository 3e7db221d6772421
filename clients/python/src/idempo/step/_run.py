"""What one delivery of a step holds and decides, the same on the sync and the asyncio ledger:
the claim's arguments, the lease token a ``Claimed`` gives, how the body's exception is recorded,
what a heartbeat's answer means, and the notes on what went unrecorded. No I/O."""

from __future__ import annotations

from typing import Any, Generic, TypedDict, TypeVar

from idempo.errors import IdempoError, LedgerUnavailable
from idempo.outcomes import Claimed, ClaimOutcome
from idempo.step._answers import Backoff, Wait, settle
from idempo.step._errormap import Classified
from idempo.step._keys import StepOptions

StepT = TypeVar("StepT", bound=StepOptions)

# How soon a heartbeat that could not reach the ledger tries again.
RETRY_UNREACHABLE_S = 0.25


class ClaimOptions(TypedDict):
    """A step's claim, but for its key and payload."""

    fingerprint_fields: tuple[str, ...]
    tool_kind: str
    run_id: str
    step_id: str
    target: str
    lease_ms: int


def detail_of(error: BaseException) -> str:
    """The detail a body's exception is recorded with."""
    return f"{type(error).__name__}: {error}"[:4000]


def note_lost(refused: IdempoError, lost: IdempoError | None) -> None:
    """Says why a record after the body was refused when the heartbeat lost the lease."""
    if lost is not None and refused.code in ("stale_lease", "illegal_transition"):
        refused.add_note(
            f"idempo: the step's lease was lost while its body ran (heartbeat refused: "
            f"{lost.code}: {lost}); the body's result was not recorded"
        )


def note_unrecorded(error: BaseException, refused: IdempoError) -> None:
    error.add_note(f"idempo: the failure was not recorded: {refused.code}: {refused}")


class RunState(Generic[StepT]):
    """One delivery of a step: its key, and the lease it holds once claimed."""

    def __init__(self, step: StepT, key: str, run_id: str, payload: Any, target: str = "") -> None:
        self.step = step
        self.key = key
        self.run_id = run_id
        self.payload = payload
        self.target = target
        self.token = 0
        self.lost: IdempoError | None = None
        self.unreachable: IdempoError | None = None

    def claim_options(self) -> ClaimOptions:
        s = self.step
        return ClaimOptions(
            fingerprint_fields=s._fields,
            tool_kind=s.tool_kind,
            run_id=self.run_id,
            step_id=s.step_id,
            target=self.target,
            lease_ms=s._lease_ms,
        )

    def answer(self, outcome: ClaimOutcome, backoff: Backoff) -> Any:
        """What a claim's ``outcome`` means (see ``settle``); keeps the token of a Claimed."""
        answer = settle(self.key, outcome, self.step._on_pending, backoff.left())
        if not isinstance(answer, Wait) and isinstance(outcome, Claimed):
            self.token = outcome.token
        return answer

    def failure(self, error: BaseException) -> tuple[Classified, str]:
        """The class and detail the body's exception is recorded with."""
        return self.step._errors.classify(error, self.step.tool_kind), detail_of(error)

    def unrecorded(self, error: BaseException, refused: IdempoError) -> None:
        """Notes on ``error``, which the caller re-raises, that the ledger refused its record."""
        note_lost(refused, self.lost)
        note_unrecorded(error, refused)

    @property
    def beat_interval(self) -> float:
        """A heartbeat every third of the lease, in seconds."""
        return self.step._lease_ms / 3000

    def after_beat(self, error: IdempoError | None) -> bool | float:
        """What a heartbeat's answer (``error`` None: it landed) means for the next one: True
        a beat after the interval, a number of seconds to try again soon, False no more."""
        if error is None:
            self.unreachable = None
            return True
        if isinstance(error, LedgerUnavailable):
            # The ledger is out of reach, not the lease lost: try again soon, until the ledger
            # answers (a beat, or the refusal of a lease really lost).
            self.unreachable = error
            return min(self.beat_interval, RETRY_UNREACHABLE_S)
        # A lost lease (StaleLease, IllegalTransition) ends the beat; the record after the body
        # is refused as stale, and says why.
        self.lost = error
        return False

"""A guard for LangGraph's tool calls and approvals on the ledger.

``ToolGuard(ledger, {"charge": GuardedTool("protected_write", key=["invoice_id"])})`` wraps the
tool calls of LangGraph's prebuilt ``ToolNode`` (``wrap_tool_call`` and ``awrap_tool_call``) or of
a LangChain agent (``guard.middleware()``, an ``AgentMiddleware``). Each declared tool call is a
claim of ``THREAD:STEP:BUSINESS_KEY``: the graph's ``thread_id`` (or the run id ``run_id=`` reads),
the tool's step name and the values of its key arguments, never the model's ``tool_call_id``.
The first call runs the tool and records its message; every later call for the same action
answers the recorded message without running the tool; a changed payload for the same key is an
error message naming the conflict. A tool marked ``requires_approval`` waits in
``awaiting_approval`` and calls ``interrupt()``; on resume the ledger's state decides, never the
resume value. The ledger decides every answer; this module turns them into tool messages.

Import this module only with LangGraph installed (``pip install 'idempo[langgraph]'``);
``middleware()`` needs ``langchain`` too. docs/langgraph.md walks through it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

try:
    from langchain_core.messages import ToolMessage
    from langgraph.errors import GraphBubbleUp
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command, interrupt
    from pydantic import BaseModel, ValidationError
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError(
        "idempo.langgraph needs LangGraph: pip install 'idempo[langgraph]'"
    ) from missing

from idempo._base import TOOL_KINDS
from idempo.aio import AsyncLedger
from idempo.canonical import key_part
from idempo.errors import IdempoError, InvalidArgument, InvalidJson, InvalidKey, PayloadTooLarge
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
from idempo.step import DEFAULT_ERRORS, ErrorMap

if TYPE_CHECKING:
    from idempo.ledger import Ledger

__all__ = ["GuardedTool", "ToolGuard"]

ToolResult = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], ToolResult]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class GuardedTool:
    """How one tool goes through the ledger.

    ``kind``: ``read`` (runs straight through, nothing recorded), ``idempotent_write`` (a lapsed
    lease is run again) or ``protected_write`` (a lapsed lease or an unclassified error goes to
    reconciliation, never run blindly again). ``key``: the argument names whose values make the
    business key, or a function of the arguments returning it. ``step``: the step name in the key
    (default: the tool's name). ``requires_approval``: the first call waits for a person.
    ``fingerprint_fields``: JSON pointers of the arguments the payload fingerprint covers (default
    all). ``value``: a function of the arguments returning ``(minor_units, currency)``, for the
    ledger's four-eyes threshold. ``lease_ms`` and ``max_attempts`` are the claim's.
    """

    kind: str
    key: Sequence[str] | Callable[[Mapping[str, Any]], str] = ()
    step: str | None = None
    requires_approval: bool = False
    fingerprint_fields: Sequence[str] = ()
    value: Callable[[Mapping[str, Any]], tuple[int, str]] | None = None
    lease_ms: int = 60_000
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in TOOL_KINDS:
            raise InvalidArgument(f"kind must be one of {', '.join(TOOL_KINDS)}, not {self.kind!r}")
        if isinstance(self.key, str):
            object.__setattr__(self, "key", (self.key,))
        elif not callable(self.key):
            object.__setattr__(self, "key", tuple(self.key))
        object.__setattr__(self, "fingerprint_fields", tuple(self.fingerprint_fields))

    def business_key(self, args: Mapping[str, Any]) -> str:
        """The business key of a call's arguments: the key function's, or the key arguments'
        values joined by ``:``, each escaped by :func:`idempo.canonical.key_part` so that
        different values never join into one key."""
        if callable(self.key):
            return str(self.key(args))
        parts = (args.get(name) for name in self.key)
        return ":".join("" if part is None else key_part(part) for part in parts)


@dataclass(frozen=True, slots=True)
class _Call:
    """One guarded tool call: its spec, operation key and what the claim sends."""

    spec: GuardedTool
    key: str
    run_id: str
    step: str
    target: str
    args: dict[str, Any]
    name: str
    tool_call_id: str
    claim: dict[str, Any] = field(repr=False)


class _Run:
    pass


class _Approval:
    pass


class _Wait:
    pass


_RUN, _APPROVAL, _WAIT = _Run(), _Approval(), _Wait()


def _thread_id(request: ToolCallRequest) -> str:
    config = getattr(request.runtime, "config", None) or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or str(thread) == "":
        raise InvalidArgument(
            "the tool guard needs the graph's thread id: invoke the graph with "
            "config={'configurable': {'thread_id': ...}}, or give ToolGuard run_id="
        )
    return str(thread)


def _valid_args(request: ToolCallRequest) -> bool:
    """Whether the tool's own schema takes the call's arguments. A call it refuses never runs
    the tool (ToolNode answers the validation error), so it is not claimed: a corrected call
    with the same business key must not meet a record of the refused one."""
    schema = getattr(request.tool, "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(request.tool_call["args"])
        except ValidationError:
            return False
    return True


def _message_of(result: ToolResult, tool_call_id: str) -> ToolMessage | None:
    """The tool message a result carries: itself, or the one for this call in a Command."""
    if isinstance(result, ToolMessage):
        return result
    update = result.update
    messages = update.get("messages", ()) if isinstance(update, dict) else ()
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, ToolMessage) and message.tool_call_id == tool_call_id:
            return message
    return None


#: Refusals of what a model chose (the business key's values, the arguments): answered as tool
#: error messages; every other refusal is the application's and raises.
_MODEL_INPUT_REFUSALS = (InvalidKey, InvalidJson, PayloadTooLarge)


class ToolGuard:
    """Runs each declared tool call at most once per action, through ``ledger``.

    ``tools`` maps tool names to their :class:`GuardedTool`; a tool it does not name, a ``read``
    and a call whose arguments the tool's schema refuses run straight through. ``run_id`` names
    the run of a call (default: the graph's ``configurable.thread_id``). ``wait_s``: how long a
    call waits for another worker's live lease or a retry time before answering an error message.
    ``errors`` classifies a tool's exception for the ledger (the step middleware's map). A sync
    ``Ledger`` serves both hooks (the async one calls it in a thread); an ``AsyncLedger`` serves
    ``awrap_tool_call`` only.
    """

    def __init__(
        self,
        ledger: Ledger | AsyncLedger,
        tools: Mapping[str, GuardedTool],
        *,
        run_id: Callable[[ToolCallRequest], str] | None = None,
        wait_s: float = 30.0,
        errors: ErrorMap = DEFAULT_ERRORS,
    ) -> None:
        self.ledger = ledger
        self.tools = dict(tools)
        self._run_id = run_id or _thread_id
        self.wait_s = wait_s
        self.errors = errors

    # --- what a call is and what an answer means: shared by both hooks ------------------------

    def _call(self, request: ToolCallRequest) -> _Call | None:
        """The guarded call a request stands for; None when it runs straight through."""
        tool_call = request.tool_call
        spec = self.tools.get(tool_call["name"])
        if spec is None or spec.kind == "read" or not _valid_args(request):
            return None
        args = dict(tool_call["args"])
        run_id = self._run_id(request)
        step = spec.step or tool_call["name"]
        target = spec.business_key(args)
        key = f"{key_part(run_id)}:{key_part(step)}" + (f":{target}" if target else "")
        claim = {
            "fingerprint_fields": spec.fingerprint_fields,
            "tool_kind": spec.kind,
            "run_id": run_id,
            "step_id": step,
            "target": target,
            "lease_ms": spec.lease_ms,
            "max_attempts": spec.max_attempts,
            "requires_approval": spec.requires_approval,
            "value": spec.value(args) if spec.value is not None else None,
        }
        return _Call(
            spec, key, run_id, step, target, args, tool_call["name"], tool_call["id"] or "", claim
        )

    @classmethod
    def _refused(cls, call: _Call, refused: IdempoError) -> ToolMessage:
        """A key or arguments the model chose that the ledger refuses: an error the agent can
        correct, not an exception that ends the run. Nothing ran and nothing was written."""
        return cls._message(
            call, f"refused, nothing was run: {refused.message} (key {call.key!r})", "refused"
        )

    @staticmethod
    def _message(call: _Call, content: str, outcome: str, *, status: str = "error") -> ToolMessage:
        return ToolMessage(
            content=content,
            tool_call_id=call.tool_call_id,
            name=call.name,
            status=status,
            response_metadata={"idempo": {"key": call.key, "outcome": outcome}},
        )

    def _answer(self, call: _Call, outcome: ClaimOutcome) -> Any:
        """``_RUN``, ``_APPROVAL``, ``_WAIT`` or the tool message the call answers instead."""
        key = call.key
        if isinstance(outcome, Claimed):
            return _RUN
        if isinstance(outcome, Replayed):
            if outcome.error is not None:
                error = outcome.error
                return self._message(
                    call,
                    f"idempo: '{key}' ended earlier with {error.error_class}: {error.detail}; "
                    "it is not run again",
                    "failed",
                )
            recorded = outcome.result if isinstance(outcome.result, dict) else {}
            return self._message(
                call,
                recorded.get("content", ""),
                "replayed",
                status=str(recorded.get("status", "success")),
            )
        if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
            return self._message(
                call,
                f"idempo: conflict: '{key}' was recorded for other arguments "
                f"({type(outcome).__name__}); nothing ran. The same action with changed "
                "arguments is refused; a new action needs its own key.",
                "conflict",
            )
        if isinstance(outcome, InProgress) and outcome.state == "awaiting_approval":
            return _APPROVAL
        if isinstance(outcome, InProgress | RetryLater):
            return _WAIT
        if isinstance(outcome, ReconcileRequired):
            return self._message(
                call,
                f"idempo: the outcome of '{key}' is unknown ({outcome.state}); a person "
                "reconciles it, and it is not run again until then",
                "reconcile_required",
            )
        assert isinstance(outcome, BudgetExhausted)
        return self._message(
            call,
            f"idempo: run '{call.run_id}' is halted by its {outcome.budget} budget "
            f"({outcome.used} of {outcome.limit}); nothing ran",
            "budget_exhausted",
        )

    def _pending(self, call: _Call, outcome: ClaimOutcome) -> ToolMessage:
        state = getattr(outcome, "operation", None)
        return self._message(
            call,
            f"idempo: '{call.key}' is not runnable now "
            f"({state.state if state is not None else type(outcome).__name__}); nothing ran",
            "pending",
        )

    def _approval_request(self, call: _Call) -> dict[str, Any]:
        """What ``interrupt()`` shows: the operation awaiting a person, and where to decide it."""
        return {
            "idempo": "awaiting_approval",
            "namespace": self.ledger.namespace,
            "key": call.key,
            "run_id": call.run_id,
            "tool": call.name,
            "args": call.args,
            "decide": f"idempo approve {call.key} --decision redispatch|reject --reason TEXT",
        }

    def _recorded(self, call: _Call, result: ToolResult) -> tuple[dict[str, Any], str | None]:
        """The record of a result and, for an error message, the error class to fail with."""
        message = _message_of(result, call.tool_call_id)
        if message is None:
            return {"content": "", "status": "success"}, None
        record = {"content": message.content, "status": message.status}
        if message.status != "error":
            return record, None
        # A tool error ToolNode turned into a message (handle_tool_errors): the effect may have
        # happened, as for an exception nothing classifies.
        return record, "unknown_outcome" if call.spec.kind == "protected_write" else "transient"

    def _unrecorded(self, error: BaseException, refused: IdempoError) -> None:
        error.add_note(f"idempo: the failure was not recorded: {refused.code}: {refused}")

    # --- the sync hook --------------------------------------------------------------------------

    def _sync_ledger(self) -> Ledger:
        if isinstance(self.ledger, AsyncLedger):
            raise TypeError("an AsyncLedger serves awrap_tool_call (ainvoke); give a Ledger")
        return self.ledger

    def wrap_tool_call(self, request: ToolCallRequest, execute: Execute) -> ToolResult:
        """``ToolNode(wrap_tool_call=...)``: runs, replays or refuses one tool call."""
        call = self._call(request)
        if call is None:
            return execute(request)
        ledger = self._sync_ledger()
        backoff = _Backoff(self.wait_s)
        while True:
            try:
                outcome = ledger.claim(call.key, call.args, **call.claim)
            except _MODEL_INPUT_REFUSALS as refused:
                return self._refused(call, refused)
            answer = self._answer(call, outcome)
            if answer is _RUN:
                assert isinstance(outcome, Claimed)
                return self._run(ledger, call, outcome.token, request, execute)
            if answer is _APPROVAL:
                # The resume value is never read: the claim after it asks the ledger.
                interrupt(self._approval_request(call))
                continue
            if answer is _WAIT:
                pause = backoff.pause()
                if pause is None:
                    return self._pending(call, outcome)
                time.sleep(pause)
                continue
            assert isinstance(answer, ToolMessage)
            return answer

    def _run(
        self, ledger: Ledger, call: _Call, token: int, request: ToolCallRequest, execute: Execute
    ) -> ToolResult:
        try:
            result = execute(request)
        except GraphBubbleUp:
            # interrupt() inside the tool: the claim is given back, the resumed call runs it again.
            ledger.transition(
                call.key,
                token,
                "failed_retryable",
                error_class="transient",
                error_detail="the tool interrupted the graph",
                retry_delay_ms=0,
            )
            raise
        except BaseException as error:
            found = self.errors.classify(error, call.spec.kind)
            try:
                ledger.fail(
                    call.key,
                    token,
                    found.error_class,
                    f"{type(error).__name__}: {error}"[:4000],
                    retry_after_ms=found.retry_after_ms,
                )
            except IdempoError as refused:
                self._unrecorded(error, refused)
            raise
        record, error_class = self._recorded(call, result)
        if error_class is None:
            ledger.complete(call.key, token, record)
        else:
            ledger.fail(call.key, token, error_class, str(record["content"])[:4000])
        return result

    # --- the async hook -------------------------------------------------------------------------

    async def _ledger_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.ledger, name)
        if isinstance(self.ledger, AsyncLedger):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    async def awrap_tool_call(self, request: ToolCallRequest, execute: AsyncExecute) -> ToolResult:
        """``ToolNode(awrap_tool_call=...)``: the async twin of :meth:`wrap_tool_call`."""
        call = self._call(request)
        if call is None:
            return await execute(request)
        backoff = _Backoff(self.wait_s)
        while True:
            try:
                outcome = await self._ledger_call("claim", call.key, call.args, **call.claim)
            except _MODEL_INPUT_REFUSALS as refused:
                return self._refused(call, refused)
            answer = self._answer(call, outcome)
            if answer is _RUN:
                assert isinstance(outcome, Claimed)
                return await self._arun(call, outcome.token, request, execute)
            if answer is _APPROVAL:
                interrupt(self._approval_request(call))
                continue
            if answer is _WAIT:
                pause = backoff.pause()
                if pause is None:
                    return self._pending(call, outcome)
                await asyncio.sleep(pause)
                continue
            assert isinstance(answer, ToolMessage)
            return answer

    async def _arun(
        self, call: _Call, token: int, request: ToolCallRequest, execute: AsyncExecute
    ) -> ToolResult:
        try:
            result = await execute(request)
        except GraphBubbleUp:
            await self._ledger_call(
                "transition",
                call.key,
                token,
                "failed_retryable",
                error_class="transient",
                error_detail="the tool interrupted the graph",
                retry_delay_ms=0,
            )
            raise
        except BaseException as error:
            found = self.errors.classify(error, call.spec.kind)
            try:
                await self._ledger_call(
                    "fail",
                    call.key,
                    token,
                    found.error_class,
                    f"{type(error).__name__}: {error}"[:4000],
                    retry_after_ms=found.retry_after_ms,
                )
            except IdempoError as refused:
                self._unrecorded(error, refused)
            raise
        record, error_class = self._recorded(call, result)
        if error_class is None:
            await self._ledger_call("complete", call.key, token, record)
        else:
            await self._ledger_call(
                "fail", call.key, token, error_class, str(record["content"])[:4000]
            )
        return result

    # --- LangChain's agent middleware -----------------------------------------------------------

    def middleware(self) -> Any:
        """This guard as a LangChain ``AgentMiddleware`` (``create_agent(middleware=[...])``)."""
        try:
            from langchain.agents.middleware import AgentMiddleware
        except ImportError as missing:  # pragma: no cover - depends on the environment
            raise ImportError("ToolGuard.middleware needs langchain: pip install langchain") from (
                missing
            )
        guard = self

        class IdempoToolGuard(AgentMiddleware):
            """Each declared tool call of the agent through the Idempo ledger."""

            def wrap_tool_call(self, request: ToolCallRequest, handler: Execute) -> ToolResult:
                return guard.wrap_tool_call(request, handler)

            async def awrap_tool_call(
                self, request: ToolCallRequest, handler: AsyncExecute
            ) -> ToolResult:
                return await guard.awrap_tool_call(request, handler)

        return IdempoToolGuard()


class _Backoff:
    """Waits of 50 ms doubling to 1 s until ``wait_s`` has passed; then None."""

    def __init__(self, wait_s: float) -> None:
        self._deadline = time.monotonic() + wait_s
        self._pause = 0.05

    def pause(self) -> float | None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            return None
        pause, self._pause = self._pause, min(self._pause * 2, 1.0)
        return min(pause, left)

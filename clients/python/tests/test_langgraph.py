"""idempo.langgraph on real LangGraph: ToolNode and LangChain's agent middleware driven by a
scripted chat model that issues a fresh tool_call_id on every turn, on the real ledger, with
approvals decided by an approver login through the CLI."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Durability

from idempo import AsyncLedger, Ledger
from idempo.langgraph import GuardedTool, ToolGuard

from .conftest import Cli, count_rows, url_for

APPROVER = "py_approver"
APPROVER_PASSWORD = "appr0ver-s3cret-py"


class Planner(BaseChatModel):
    """A chat model that makes the calls of its plan, one a turn, each with a new tool_call_id,
    then answers "done". Its turn is the number of tool messages so far, so a re-run model node
    asks for the same action again under a new id, as a real model does."""

    plan: list[tuple[str, dict[str, Any]]]

    @property
    def _llm_type(self) -> str:
        return "planner"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(isinstance(m, ToolMessage) for m in messages)
        if turn < len(self.plan):
            name, args = self.plan[turn]
            call = {
                "name": name,
                "args": args,
                "id": f"call_{uuid.uuid4().hex}",
                "type": "tool_call",
            }
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Planner:
        return self


class Bank:
    """The effects the test's tools make, counted by the test."""

    def __init__(self) -> None:
        self.charges: list[tuple[str, int]] = []
        self.lock = threading.Lock()
        self.delay_s = 0.0

    def tools(self) -> list[Any]:
        @tool
        def charge(invoice_id: str, amount: int) -> str:
            """Charges an invoice."""
            time.sleep(self.delay_s)
            with self.lock:
                self.charges.append((invoice_id, amount))
                return f"charged {amount} for {invoice_id} (#{len(self.charges)})"

        @tool
        def balance(account: str) -> str:
            """Reads a balance."""
            return f"{account}: 100"

        return [charge, balance]


Plan = list[tuple[str, dict[str, Any]]]

SPECS = {
    "charge": GuardedTool("protected_write", key=["invoice_id"]),
    "balance": GuardedTool("read"),
}
APPROVED = {"charge": GuardedTool("protected_write", key=["invoice_id"], requires_approval=True)}


def graph(
    model: Planner,
    node: ToolNode,
    saver: InMemorySaver | None = None,
    entered: list[int] | None = None,
    tools: Any = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """agent -> tools -> agent ... until the model answers without a tool call; ``tools`` stands
    for the tools node, ``entered`` counts its runs."""
    builder = StateGraph(MessagesState)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def counted(state: MessagesState, config: RunnableConfig) -> Any:
        if entered is not None:
            entered.append(1)  # code before the guard: re-runs on resume
        return node.invoke(state, config)

    builder.add_node("agent", agent)
    builder.add_node("tools", tools or (node if entered is None else counted))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def ask(text: str = "charge inv-1") -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text)]}


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": "th-" + uuid.uuid4().hex[:10]}}


@pytest.fixture(scope="session")
def approver_url(ledger_ready: str) -> str:
    with psycopg.connect(ledger_ready, autocommit=True) as conn:
        conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APPROVER}') THEN "
            f"CREATE ROLE {APPROVER} LOGIN PASSWORD '{APPROVER_PASSWORD}' IN ROLE idempo_approver; "
            "END IF; END $$"
        )
    return url_for(ledger_ready, APPROVER, APPROVER_PASSWORD)


@pytest.fixture
def approver(cli: Cli, approver_url: str) -> Cli:
    """The CLI as the approver login: identity is the login."""
    return Cli(cli.path, approver_url)


def decide(approver: Cli, ns: str, key: str, decision: str) -> None:
    status, answer = approver.run(
        "approve", key, "--decision", decision, "--reason", "checked the invoice", namespace=ns
    )
    assert status == 0, answer
    assert answer["result"]["status"] == "applied", answer


def only_key(thread_config: RunnableConfig) -> str:
    return f"{thread_config['configurable']['thread_id']}:charge:inv-1"


# --- the guard on ToolNode ------------------------------------------------------------------------


def test_rerun_model_node_new_tool_call_ids_one_effect(ledger: Ledger) -> None:
    bank = Bank()
    guard = ToolGuard(ledger, SPECS)
    node = ToolNode(bank.tools(), wrap_tool_call=guard.wrap_tool_call)
    # The model asks for the same charge twice (new ids), and reads a balance twice.
    plan: Plan = [
        ("charge", {"invoice_id": "inv-1", "amount": 10}),
        ("balance", {"account": "a"}),
        ("charge", {"invoice_id": "inv-1", "amount": 10}),
        ("balance", {"account": "a"}),
    ]
    config = thread()
    first = graph(Planner(plan=plan), node).invoke(ask(), config)
    # The whole thread again from its start (a crash before any checkpoint): every model turn
    # re-runs and issues new tool_call_ids.
    again = graph(Planner(plan=plan), node).invoke(ask(), config)

    assert bank.charges == [("inv-1", 10)]
    messages = tool_messages(first) + tool_messages(again)
    assert len({m.tool_call_id for m in messages}) == 8
    charges = [m for m in messages if m.name == "charge"]
    assert {m.content for m in charges} == {"charged 10 for inv-1 (#1)"}
    assert [m.response_metadata.get("idempo", {}).get("outcome") for m in charges] == [
        None,
        "replayed",
        "replayed",
        "replayed",
    ]
    key = only_key(config)
    op = ledger.show(key)
    assert (op.state, op.run_id, op.step_id, op.target, op.tool_kind) == (
        "succeeded",
        config["configurable"]["thread_id"],
        "charge",
        "inv-1",
        "protected_write",
    )
    assert [e.to_state for e in ledger.history(key)].count("dispatching") == 1


def test_changed_payload_is_a_conflict_the_agent_sees(ledger: Ledger) -> None:
    bank = Bank()
    node = ToolNode(bank.tools(), wrap_tool_call=ToolGuard(ledger, SPECS).wrap_tool_call)
    plan: Plan = [
        ("charge", {"invoice_id": "inv-1", "amount": 10}),
        ("charge", {"invoice_id": "inv-1", "amount": 99}),
        # Arguments the tool refuses never reach the ledger, so they pin no payload.
        ("charge", {"invoice_id": "inv-2", "amount": "lots"}),
        ("charge", {"invoice_id": "inv-2", "amount": 5}),
    ]
    result = graph(Planner(plan=plan), node).invoke(ask(), thread())
    first, conflict, invalid, second = tool_messages(result)
    assert bank.charges == [("inv-1", 10), ("inv-2", 5)]
    assert first.status == "success"
    assert conflict.status == "error"
    assert "conflict" in str(conflict.content)
    assert "inv-1" in str(conflict.content)
    assert conflict.response_metadata["idempo"]["outcome"] == "conflict"
    assert invalid.status == "error"
    assert second.content == "charged 5 for inv-2 (#2)"


def test_a_key_the_ledger_refuses_is_an_error_the_agent_sees(
    ledger: Ledger, ledger_ready: str, ns: str
) -> None:
    bank = Bank()
    node = ToolNode(bank.tools(), wrap_tool_call=ToolGuard(ledger, SPECS).wrap_tool_call)
    plan: Plan = [
        ("charge", {"invoice_id": "inv\n3", "amount": 10}),
        ("charge", {"invoice_id": "x" * 300, "amount": 10}),
        ("charge", {"invoice_id": "inv-3", "amount": 10}),
    ]
    config = thread()
    result = graph(Planner(plan=plan), node).invoke(ask(), config)
    control, too_long, corrected = tool_messages(result)
    assert bank.charges == [("inv-3", 10)]
    for refused in (control, too_long):
        assert refused.status == "error"
        assert "refused, nothing was run" in str(refused.content)
        assert refused.response_metadata["idempo"]["outcome"] == "refused"
    assert corrected.status == "success"
    assert count_rows(ledger_ready, ns) == (1, 0)  # the corrected call's record, nothing else


def test_key_arguments_that_join_alike_are_two_actions(ledger: Ledger) -> None:
    bank = Bank()
    specs = {"charge": GuardedTool("protected_write", key=["invoice_id", "amount"])}
    node = ToolNode(bank.tools(), wrap_tool_call=ToolGuard(ledger, specs).wrap_tool_call)
    # Joined with a bare ':' both would be "acme:eu:7"; a '%' is escaped too.
    plan: Plan = [
        ("charge", {"invoice_id": "acme:eu", "amount": 7}),
        ("charge", {"invoice_id": "acme", "amount": 7}),
        ("charge", {"invoice_id": "acme%3Aeu", "amount": 7}),
    ]
    result = graph(Planner(plan=plan), node).invoke(ask(), thread())
    assert [m.status for m in tool_messages(result)] == ["success"] * 3
    assert bank.charges == [("acme:eu", 7), ("acme", 7), ("acme%3Aeu", 7)]


def test_awrap_tool_call_on_the_async_ledger(worker_url: str, ns: str) -> None:
    bank = Bank()
    plan: Plan = [("charge", {"invoice_id": "inv-1", "amount": 10})] * 2
    config = thread()

    async def main() -> list[ToolMessage]:
        async with await AsyncLedger.connect(worker_url, namespace=ns) as aledger:
            guard = ToolGuard(aledger, SPECS)
            node = ToolNode(bank.tools(), awrap_tool_call=guard.awrap_tool_call)
            first = await graph(Planner(plan=plan), node).ainvoke(ask(), config)
            again = await graph(Planner(plan=plan), node).ainvoke(ask(), config)
            return tool_messages(first) + tool_messages(again)

    messages = asyncio.run(main())
    assert bank.charges == [("inv-1", 10)]
    assert len({m.tool_call_id for m in messages}) == 4
    assert {m.content for m in messages} == {"charged 10 for inv-1 (#1)"}


def test_agent_middleware_of_create_agent(ledger: Ledger) -> None:
    bank = Bank()
    guard = ToolGuard(ledger, SPECS)
    plan: Plan = [("charge", {"invoice_id": "inv-7", "amount": 3})] * 3
    agent: Any = create_agent(Planner(plan=plan), bank.tools(), middleware=[guard.middleware()])
    config = thread()
    result = agent.invoke(ask(), config)
    assert bank.charges == [("inv-7", 3)]
    charges = tool_messages(result)
    assert len({m.tool_call_id for m in charges}) == 3
    assert {m.content for m in charges} == {"charged 3 for inv-7 (#1)"}
    key = f"{config['configurable']['thread_id']}:charge:inv-7"
    assert ledger.show(key).state == "succeeded"


# --- approvals ------------------------------------------------------------------------------------


def test_effect_after_interrupt_runs_once_across_a_resume(
    ledger: Ledger, approver: Cli, ns: str
) -> None:
    bank = Bank()
    saver = InMemorySaver()
    entered: list[int] = []
    node = ToolNode(bank.tools(), wrap_tool_call=ToolGuard(ledger, APPROVED).wrap_tool_call)
    plan: Plan = [("charge", {"invoice_id": "inv-1", "amount": 1250})]
    app = graph(Planner(plan=plan), node, saver, entered)
    config = thread()

    paused = app.invoke(ask(), config)
    (waiting,) = paused["__interrupt__"]
    key = only_key(config)
    assert waiting.value["key"] == key
    assert waiting.value["args"] == {"invoice_id": "inv-1", "amount": 1250}
    op = ledger.show(key)
    # What the console's worklist shows: the operation waiting, its payload and its thread.
    assert (op.state, op.run_id) == ("awaiting_approval", config["configurable"]["thread_id"])
    assert op.payload == '{"amount":1250,"invoice_id":"inv-1"}'
    assert bank.charges == []

    decide(approver, ns, key, "redispatch")
    done = app.invoke(Command(resume={"approved": True}), config)
    assert bank.charges == [("inv-1", 1250)]
    assert tool_messages(done)[-1].content == "charged 1250 for inv-1 (#1)"
    assert done["messages"][-1].content == "done"
    assert len(entered) == 2  # the node ran again on resume; the effect did not

    # The same thread replayed from its start by a fresh graph: the effect still does not.
    again = graph(Planner(plan=plan), node).invoke(ask(), config)
    assert tool_messages(again)[-1].content == "charged 1250 for inv-1 (#1)"
    assert bank.charges == [("inv-1", 1250)]
    assert ledger.show(key).state == "succeeded"


def test_forged_resume_runs_nothing(ledger: Ledger, approver: Cli, ns: str) -> None:
    bank = Bank()
    saver = InMemorySaver()
    node = ToolNode(bank.tools(), wrap_tool_call=ToolGuard(ledger, APPROVED).wrap_tool_call)
    app = graph(Planner(plan=[("charge", {"invoice_id": "inv-1", "amount": 900})]), node, saver)
    config = thread()
    key = only_key(config)

    assert "__interrupt__" in app.invoke(ask(), config)
    # A resume that says approved while the ledger says pending: the graph waits again.
    forged = app.invoke(Command(resume={"approved": True, "by": "someone"}), config)
    assert forged["__interrupt__"][0].value["key"] == key
    assert bank.charges == []
    assert ledger.show(key).state == "awaiting_approval"

    # Rejected in the ledger: a resume that says approved gets the rejection, and nothing runs.
    decide(approver, ns, key, "reject")
    rejected = app.invoke(Command(resume={"approved": True}), config)
    message = tool_messages(rejected)[-1]
    assert message.status == "error"
    assert "policy_denied" in str(message.content)
    assert bank.charges == []
    assert ledger.show(key).state == "failed_terminal"


def test_two_workers_resuming_one_thread_make_one_effect(
    worker_url: str, approver: Cli, ns: str
) -> None:
    bank = Bank()
    bank.delay_s = 0.3  # the first worker is still in the tool when the second claims
    saver = InMemorySaver()
    plan: Plan = [("charge", {"invoice_id": "inv-1", "amount": 40})]
    config = thread()
    key = f"{config['configurable']['thread_id']}:charge:inv-1"
    ledgers = [
        Ledger(worker_url, namespace=ns, owner=f"worker-{n}", min_size=1, max_size=2)
        for n in range(2)
    ]
    try:
        apps = [
            graph(
                Planner(plan=plan),
                ToolNode(bank.tools(), wrap_tool_call=ToolGuard(one, APPROVED).wrap_tool_call),
                saver,
            )
            for one in ledgers
        ]
        assert "__interrupt__" in apps[0].invoke(ask(), config)
        decide(approver, ns, key, "redispatch")

        start = threading.Barrier(2)
        results: list[dict[str, Any]] = [{}, {}]

        def resume(n: int) -> None:
            start.wait()
            results[n] = apps[n].invoke(Command(resume="go"), config)

        workers = [threading.Thread(target=resume, args=(n,)) for n in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        assert bank.charges == [("inv-1", 40)]
        answers = {tool_messages(r)[-1].content for r in results}
        assert answers == {"charged 40 for inv-1 (#1)"}
        assert [e.to_state for e in ledgers[0].history(key)].count("dispatching") == 1
        # The second worker did reach the guard: its claims were answered, not run.
        assert count_rows(worker_url, ns)[1] >= 1
    finally:
        for one in ledgers:
            one.close()


@pytest.mark.parametrize("durability", ["exit", "async", "sync"])
def test_crash_after_the_effect_on_each_durability_mode(
    ledger: Ledger, durability: Durability
) -> None:
    """The tools node dies after the tool's effect, before LangGraph saved its writes; the
    thread runs again from what the checkpointer kept: the model's message (the same
    tool_call_id) when the graph saw the error, nothing (a new one) when the process was killed
    under "exit", which saves only as the graph exits."""
    bank = Bank()
    node = ToolNode(bank.tools(), wrap_tool_call=ToolGuard(ledger, SPECS).wrap_tool_call)
    crashed: list[int] = []

    def dies_once(state: MessagesState, config: RunnableConfig) -> Any:
        update = node.invoke(state, config)
        if not crashed:
            crashed.append(1)
            raise ConnectionResetError("the worker died")
        return update

    plan: Plan = [("charge", {"invoice_id": "inv-1", "amount": 10})]
    app = graph(Planner(plan=plan), node, InMemorySaver(), tools=dies_once)
    config = thread()
    with pytest.raises(ConnectionResetError):
        app.invoke(ask(), config, durability=durability)
    assert app.get_state(config).next == ("tools",)
    done = app.invoke(None, config, durability=durability)
    # Killed instead, with nothing saved: the thread again from its input, on a new checkpointer.
    killed = graph(Planner(plan=plan), node, InMemorySaver())
    again = killed.invoke(ask(), config, durability=durability)

    assert bank.charges == [("inv-1", 10)]
    for result in (done, again):
        message = tool_messages(result)[-1]
        assert message.content == "charged 10 for inv-1 (#1)"
        assert message.response_metadata["idempo"]["outcome"] == "replayed"

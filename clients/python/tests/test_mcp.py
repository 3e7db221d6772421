"""The MCP guard (``python -m idempo.mcp``) in front of a real upstream MCP server
(tests/mcp_upstream.py, whose tools journal their effects), driven by the SDK's own client over
stdio, on the real ledger."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, RequestParamsMeta

from idempo import Ledger
from idempo.mcp import RUN_ID_META, STATUS_META, STEP_ID_META, ConfigError, parse_config

from .conftest import count_rows

UPSTREAM = Path(__file__).resolve().parent / "mcp_upstream.py"


class Rig:
    """A guard's configuration and its upstream's journal of effects, in the test's directory."""

    def __init__(self, tmp_path: Path, ledger_url: str, ns: str, **tools: Any) -> None:
        self.effects = tmp_path / "effects.txt"
        self.effects.touch()
        self.url = ledger_url
        self.config = tmp_path / "guard.json"
        self.config.write_text(json.dumps({"namespace": ns, "lease_ms": 5000, "tools": tools}))

    def command(self, *upstream_flags: str) -> list[str]:
        upstream = [sys.executable, str(UPSTREAM), "--effects", str(self.effects), *upstream_flags]
        return [
            "-m",
            "idempo.mcp",
            "--upstream",
            shlex.join(upstream),
            "--config",
            str(self.config),
        ]

    @asynccontextmanager
    async def session(self, *upstream_flags: str) -> AsyncIterator[ClientSession]:
        """A client session with a new guard process (the ledger's URL in $IDEMPO_LEDGER)."""
        params = StdioServerParameters(
            command=sys.executable,
            args=self.command(*upstream_flags),
            env={"IDEMPO_LEDGER": self.url},
        )
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            yield session

    def effects_of(self, tool: str) -> int:
        lines = self.effects.read_text(encoding="utf-8").splitlines()
        return sum(1 for line in lines if line.split("\t", 1)[0] == tool)


CHARGE: dict[str, Any] = {"key_args": ["invoice_id"]}


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    anyio.run(scenario)


def meta(run_id: str | None = "run-1", step_id: str | None = "pay") -> RequestParamsMeta:
    """The request ``_meta`` an agent sends with a guarded call."""
    fields = {RUN_ID_META: run_id, STEP_ID_META: step_id}
    return cast(RequestParamsMeta, {k: v for k, v in fields.items() if v is not None})


def status(result: CallToolResult) -> str:
    return str((result.meta or {}).get(STATUS_META))


def text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_a_duplicate_call_is_answered_from_the_ledger(
    tmp_path: Path, worker_url: str, ledger: Ledger, ns: str
) -> None:
    rig = Rig(tmp_path, worker_url, ns, charge=CHARGE)

    async def scenario() -> None:
        async with rig.session() as session:
            args: dict[str, Any] = {"invoice_id": "inv-7", "amount": 1250}
            first = await session.call_tool("charge", args, meta=meta())
            again = await session.call_tool("charge", args, meta=meta())
            assert (status(first), status(again)) == ("executed", "replayed")
            assert not first.is_error and not again.is_error
            assert again.structured_content == first.structured_content
            assert again.content == first.content
            # idempotentHint: the same, as an idempotent write
            for _ in range(2):
                done = await session.call_tool(
                    "set_status", {"ticket": "t-1", "status": "open"}, meta=meta(step_id="triage")
                )
                assert text(done) == "ticket t-1 is open"

    run(scenario)
    assert (rig.effects_of("charge"), rig.effects_of("set_status")) == (1, 1)
    record = ledger.show("run-1:pay:charge:inv-7")
    assert (record.state, record.tool_kind, record.target) == (
        "succeeded",
        "protected_write",
        "inv-7",
    )
    assert ledger.show("run-1:triage:set_status").tool_kind == "idempotent_write"


def test_concurrent_duplicates_from_two_sessions_make_one_effect(
    tmp_path: Path, worker_url: str, ns: str
) -> None:
    rig = Rig(tmp_path, worker_url, ns, charge=CHARGE)
    args: dict[str, Any] = {"invoice_id": "inv-8", "amount": 990}
    answers: list[CallToolResult] = []

    async def one(ready: anyio.Event, go: anyio.Event, done: anyio.Event, again: bool) -> None:
        # both guards start at once and call once both are up; one calls again after both answered
        async with rig.session("--delay", "1.0") as session:
            ready.set()
            await go.wait()
            answers.append(await session.call_tool("charge", args, meta=meta()))
            if again:
                await done.wait()
                answers.append(await session.call_tool("charge", args, meta=meta()))

    async def scenario() -> None:
        go, first_done = anyio.Event(), anyio.Event()
        ready = [anyio.Event(), anyio.Event()]
        async with anyio.create_task_group() as group:
            group.start_soon(one, ready[0], go, first_done, False)
            group.start_soon(one, ready[1], go, first_done, True)
            for event in ready:
                await event.wait()
            go.set()
            while len(answers) < 2:
                await anyio.sleep(0.05)
            first_done.set()

    run(scenario)
    assert sorted(status(a) for a in answers[:2]) == ["executed", "in_progress"]
    busy = next(a for a in answers[:2] if status(a) == "in_progress")
    assert busy.is_error and "in progress" in text(busy)
    executed = next(a for a in answers if status(a) == "executed")
    assert status(answers[2]) == "replayed"
    assert answers[2].structured_content == executed.structured_content
    assert rig.effects_of("charge") == 1


def test_conflicts_refusals_error_results_and_reads(
    tmp_path: Path, worker_url: str, ledger: Ledger, ledger_ready: str, ns: str
) -> None:
    rig = Rig(tmp_path, worker_url, ns, charge=CHARGE)
    records: list[tuple[int, int]] = []

    async def scenario() -> None:
        async with rig.session() as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
            assert listed == {"balance", "set_status", "charge", "refund"}
            # reads pass through, without a record or meta
            for _ in range(2):
                read = await session.call_tool("balance", {"account": "a-2"})
                assert not read.is_error and read.structured_content["balance"] == 100
            records.append(count_rows(ledger_ready, ns))
            # a write without its run and step is refused, nothing run
            bare = await session.call_tool("charge", {"invoice_id": "i", "amount": 1})
            assert bare.is_error and status(bare) == "refused"
            assert RUN_ID_META in text(bare) and STEP_ID_META in text(bare)
            half = await session.call_tool(
                "charge", {"invoice_id": "i", "amount": 1}, meta=meta("r", None)
            )
            assert status(half) == "refused" and "missing: idempo/step_id" in text(half)
            # another payload under the same key is a conflict
            await session.call_tool("charge", {"invoice_id": "inv-9", "amount": 5}, meta=meta())
            other = await session.call_tool(
                "charge", {"invoice_id": "inv-9", "amount": 500}, meta=meta()
            )
            assert other.is_error and status(other) == "conflict"
            assert "conflict" in text(other) and "run-1:pay:charge:inv-9" in text(other)
            fresh = await session.call_tool(
                "charge", {"invoice_id": "inv-10", "amount": 500}, meta=meta()
            )
            assert status(fresh) == "executed"
            # the tool's error result is recorded as a failure and answered again
            for _ in range(2):
                refused = await session.call_tool("refund", {"invoice_id": "inv-1"}, meta=meta())
                assert refused.is_error and status(refused) == "failed"
                assert "cannot be refunded" in text(refused)

    run(scenario)
    assert records == [(0, 0)]
    assert rig.effects_of("balance") == 2
    assert rig.effects_of("charge") == 2
    assert rig.effects_of("refund") == 1
    assert ledger.show("run-1:pay:refund").state == "failed_terminal"


def test_an_upstream_dying_mid_call_leaves_an_unknown_outcome(
    tmp_path: Path, worker_url: str, ledger: Ledger, ns: str
) -> None:
    rig = Rig(tmp_path, worker_url, ns, charge=CHARGE)
    args: dict[str, Any] = {"invoice_id": "inv-11", "amount": 70}

    async def scenario() -> None:
        async with rig.session("--die-on", "charge") as session:
            lost = await session.call_tool("charge", args, meta=meta())
            assert lost.is_error and status(lost) == "unknown_outcome"
            assert "reconciliation" in text(lost)
            again = await session.call_tool("charge", args, meta=meta())
            assert again.is_error and status(again) == "unknown_outcome"
            # the guard starts the upstream anew for the calls that need it
            read = await session.call_tool("balance", {"account": "a-1"})
            assert read.structured_content == {"account": "a-1", "balance": 100}

    run(scenario)
    assert rig.effects_of("charge") == 1
    record = ledger.show("run-1:pay:charge:inv-11")
    assert record.state == "unknown_outcome"
    assert record.attempt == 1


def test_an_approval_is_decided_in_the_ledger(
    tmp_path: Path, worker_url: str, ledger_ready: str, ns: str
) -> None:
    rig = Rig(tmp_path, worker_url, ns, charge={**CHARGE, "requires_approval": True})
    args: dict[str, Any] = {"invoice_id": "inv-12", "amount": 40_000}

    async def scenario() -> None:
        async with rig.session() as session:
            for _ in range(2):
                waiting = await session.call_tool("charge", args, meta=meta())
                assert waiting.is_error and status(waiting) == "awaiting_approval"
                assert "awaiting approval" in text(waiting)
            assert rig.effects_of("charge") == 0
            with psycopg.connect(ledger_ready, autocommit=True) as conn:
                conn.execute(
                    "SELECT * FROM idempo.approve(%s, %s, %s, 'redispatch', 'ok')",
                    (ns, "run-1:pay:charge:inv-12", f"approval-{ns}"),
                )
            done = await session.call_tool("charge", args, meta=meta())
            assert status(done) == "executed"
            assert status(await session.call_tool("charge", args, meta=meta())) == "replayed"

    run(scenario)
    assert rig.effects_of("charge") == 1


def guard_exit(rig: Rig, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
        timeout=30,
    )
    return done.returncode, done.stderr


def test_startup_errors_are_clear(
    tmp_path: Path, worker_url: str, ledger_ready: str, ns: str
) -> None:
    rig = Rig(tmp_path, worker_url, ns, wire_money={"kind": "protected_write"})
    code, err = guard_exit(rig, *rig.command(), "--ledger", worker_url)
    assert code == 2 and "upstream lacks: wire_money" in err and "charge" in err

    rig = Rig(tmp_path, worker_url, ns)
    bad = ["-m", "idempo.mcp", "--upstream", "no-such-mcp-server --x", "--ledger", worker_url]
    code, err = guard_exit(rig, *bad, "--config", str(rig.config))
    assert code == 2 and "no-such-mcp-server" in err and "did not start" in err

    closed = f"postgresql://py_worker:Sup3r-secret@127.0.0.1:{free_port()}/idempo"
    code, err = guard_exit(rig, *rig.command(), "--ledger", closed)
    assert code == 2 and "the ledger" in err and "Sup3r-secret" not in err

    # A database without the schema: refused at start, not at the first call.
    with psycopg.connect(ledger_ready, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS py_no_schema")
        conn.execute("CREATE DATABASE py_no_schema")
    empty = ledger_ready.rsplit("/", 1)[0] + "/py_no_schema"
    code, err = guard_exit(rig, *rig.command(), "--ledger", empty)
    assert code == 2 and "idempo init" in err


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_configuration_is_checked() -> None:
    config = parse_config(
        {
            "namespace": "agents",
            "tools": {"charge": {"key_args": ["id"], "requires_approval": True}},
        }
    )
    assert config.tools["charge"].key_args == ("id",)
    for bad, message in (
        ({"tools": {"t": {"kind": "write"}}}, "tools.t.kind"),
        ({"tools": {"t": {"key_args": "id"}}}, "tools.t.key_args"),
        ({"tools": {"t": {"kind": "read", "requires_approval": True}}}, "cannot require"),
        ({"tools": {"t": {"keys": []}}}, "unknown field(s) keys"),
        ({"lease_ms": 10}, "lease_ms"),
    ):
        try:
            parse_config(bad)
        except ConfigError as error:
            assert message in str(error)
        else:
            raise AssertionError(f"{bad} was accepted")

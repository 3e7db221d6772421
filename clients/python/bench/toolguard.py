"""Latency per tool call: LangGraph's ``ToolNode`` with Idempo's tool guard beside the same
``ToolNode`` and graph without it, median and p99, on one PostgreSQL server in one run.

    python clients/python/bench/toolguard.py --url postgresql://USER@HOST:PORT/DB \\
        [--graphs 1,8] [--rounds 3] [--seconds 5]

The ledger must exist in DB (``idempo --ledger URL init``). Runs in CI's venv
(``tests/python/python-venv.sh`` prints its path; langgraph and its dependencies pinned by
``clients/python/constraints.txt``), not the bench's own (its requirements have no LangGraph).

G threads each invoke their own compiled graph, ``START -> tools -> END``, back to back, each under
its own ``thread_id`` (no checkpointer: what is measured is the tool call, not the checkpoints).
Every invocation's input is a model message asking for one call of ``charge(invoice_id, amount)``,
a new ``invoice_id`` each time; the tool does trivial work (it formats a string), so what shows is
the cost around it. The tools node is a ``ToolNode([charge])`` whose ``wrap_tool_call`` is:

* ``bare``: a timer around ``execute(request)``, the tool as ToolNode runs it;
* ``guarded``: the same timer around ``ToolGuard.wrap_tool_call(request, execute)``, ``charge`` a
  ``protected_write`` keyed by ``invoice_id``: a claim (``claimed``, a new key), the tool, the
  completion with its message, through the client's pool of G connections.

The timer gives the *tool call*; the time of the whole ``graph.invoke`` is kept beside it (the
same LangGraph work around both). Every measurement runs in a fresh process: 1 s unmeasured, then
``--seconds`` measured (calls that started and ended in the window). Rounds alternate the order of
the two columns. The figures are, per column, the median over the rounds of each round's median
and p99, their ratio guarded / bare and the added milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

KINDS = ("bare", "guarded")
WARMUP_S = 1.0

Samples = dict[str, list[float]]


def _graph(wrap: Callable[[Any, Any], Any]) -> Any:
    """``START -> tools -> END``: a ``ToolNode`` of the one trivial tool, ``wrap`` its hook."""
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def charge(invoice_id: str, amount: int) -> str:
        """Charges an invoice."""
        return f"charged {amount} for {invoice_id}"

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([charge], wrap_tool_call=wrap))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def _ask(invoice_id: str, amount: int) -> dict[str, Any]:
    from langchain_core.messages import AIMessage

    call = {
        "name": "charge",
        "args": {"invoice_id": invoice_id, "amount": amount},
        "id": f"call_{uuid.uuid4().hex}",
        "type": "tool_call",
    }
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def _drive(graphs: int, seconds: float, kind: str, url: str) -> Samples:
    """G threads, each invoking its own graph back to back; the latencies (ms) of the tool calls
    and of the whole invocations that started and ended in the measured window."""
    from langchain_core.messages import ToolMessage

    from idempo import Ledger
    from idempo.langgraph import GuardedTool, ToolGuard

    tag = uuid.uuid4().hex[:8]
    ledger = Ledger(url, namespace=f"bench-tg-{tag}", min_size=graphs, max_size=graphs)
    guard = ToolGuard(ledger, {"charge": GuardedTool("protected_write", key=["invoice_id"])})
    window = {"start": float("inf"), "end": float("inf")}
    samples: Samples = {"tool": [], "graph": []}
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep(what: str, started: float, ended: float) -> None:
        if started >= window["start"] and ended <= window["end"]:
            with lock:
                samples[what].append((ended - started) * 1000.0)

    def timed(request: Any, execute: Any) -> Any:
        started = time.perf_counter()
        result = guard.wrap_tool_call(request, execute) if kind == "guarded" else execute(request)
        keep("tool", started, time.perf_counter())
        return result

    def loop(worker: int) -> None:
        graph = _graph(timed)
        config = {"configurable": {"thread_id": f"{tag}-g{worker}"}}
        n = 0
        try:
            while not stop.is_set():
                started = time.perf_counter()
                out = graph.invoke(_ask(f"inv-{worker}-{n}", n), config)
                keep("graph", started, time.perf_counter())
                message = out["messages"][-1]
                assert isinstance(message, ToolMessage) and message.status == "success", message
                n += 1
        except BaseException as error:
            failures.append(error)
            stop.set()

    with ledger:
        threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in range(graphs)]
        for thread in threads:
            thread.start()
        time.sleep(WARMUP_S)
        window["start"] = time.perf_counter()
        time.sleep(seconds)
        window["end"] = time.perf_counter()
        stop.set()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]
    return samples


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def measure(kind: str, url: str, graphs: int, seconds: float) -> dict[str, Any]:
    """One measurement in a fresh process: per what (tool, graph) its calls, median and p99."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--one",
            kind,
            "--url",
            url,
            "--graphs",
            str(graphs),
            "--seconds",
            str(seconds),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{kind} G={graphs} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the ledger's database (a libpq URI)")
    parser.add_argument("--graphs", default="1,8", help="concurrent graphs (threads)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:
        samples = _drive(int(args.graphs), args.seconds, args.one, args.url)
        print(
            json.dumps(
                {
                    what: {
                        "calls": len(values),
                        "median": statistics.median(values),
                        "p99": _p99(values),
                    }
                    for what, values in samples.items()
                }
            )
        )
        return 0

    results: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        order = KINDS[r % 2 :] + KINDS[: r % 2]
        print(f"round {r + 1} ({_load()})", file=sys.stderr, flush=True)
        for graphs in _ints(args.graphs):
            for kind in order:
                got = measure(kind, args.url, graphs, args.seconds)
                results.setdefault((graphs, kind), []).append(got)
                tool, whole = got["tool"], got["graph"]
                print(
                    f"round {r + 1} G={graphs:<2} {kind:<8} tool call median "
                    f"{tool['median']:6.2f} ms p99 {tool['p99']:6.2f} ms ({tool['calls']} calls);"
                    f" graph.invoke median {whole['median']:6.2f} ms p99 {whole['p99']:6.2f} ms"
                    f"  ({_load()})",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"end ({_load()}); {os.cpu_count()} CPUs", file=sys.stderr, flush=True)

    for what, title in (("tool", "the tool call (ToolNode's hook)"), ("graph", "graph.invoke")):
        print(f"\n{title}, ms: median over the rounds (each round's lowest-highest)\n")
        print(
            "| graphs | bare median | bare p99 | guarded median | guarded p99 "
            "| guarded / bare (median, p99) | added ms (median, p99) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for graphs in _ints(args.graphs):
            fig: dict[tuple[str, str], float] = {}
            cell: dict[tuple[str, str], str] = {}
            for kind in KINDS:
                for stat in ("median", "p99"):
                    values = [got[what][stat] for got in results[(graphs, kind)]]
                    fig[(kind, stat)] = statistics.median(values)
                    cell[(kind, stat)] = (
                        f"{fig[(kind, stat)]:.2f} ({min(values):.2f}-{max(values):.2f})"
                    )
            ratio = {s: fig[("guarded", s)] / fig[("bare", s)] for s in ("median", "p99")}
            added = {s: fig[("guarded", s)] - fig[("bare", s)] for s in ("median", "p99")}
            print(
                f"| {graphs} | {cell[('bare', 'median')]} | {cell[('bare', 'p99')]} "
                f"| {cell[('guarded', 'median')]} | {cell[('guarded', 'p99')]} "
                f"| {ratio['median']:.1f}x, {ratio['p99']:.1f}x "
                f"| +{added['median']:.2f}, +{added['p99']:.2f} |"
            )
    print("\nper round, the tool call: guarded / bare median, added median ms")
    for graphs in _ints(args.graphs):
        pairs = zip(results[(graphs, "bare")], results[(graphs, "guarded")], strict=True)
        parts = [
            f"{g['tool']['median'] / b['tool']['median']:.1f}x +"
            f"{g['tool']['median'] - b['tool']['median']:.2f}"
            for b, g in pairs
        ]
        print(f"  G={graphs}: " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

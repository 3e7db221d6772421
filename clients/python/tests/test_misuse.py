"""Misuse the client refuses or survives: a step object shared by threads and tasks, wrong
argument types, odd Retry-After values, deep nesting, keys that change between evaluations."""

from __future__ import annotations

import asyncio
import threading

from idempo import AsyncLedger, Ledger, OnPending

# --- 7: a Step object's blocks keep their own state --------------------------------------------


def test_a_step_object_shared_by_two_threads_records_each_block_itself(ledger: Ledger) -> None:
    step = ledger.step("mail", run_id="run-7", payload={"to": "c"}, on_pending=OnPending.RETURN)
    entered, other_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def holder() -> None:
        with step as handle:
            seen.append(handle.should_run)
            handle.result = {"sent": True}
            entered.set()
            other_done.wait(10)

    def other() -> None:
        entered.wait(10)
        with step as handle:  # the holder has the lease: a Pending marker, nothing to record
            seen.append(handle.should_run)
        other_done.set()

    threads = [threading.Thread(target=holder), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == [True, False]
    op = ledger.show("run-7:mail")
    assert (op.state, op.result_value()) == ("succeeded", {"sent": True})


def test_an_async_step_object_shared_by_two_tasks_records_each_block_itself(
    worker_url: str, ns: str
) -> None:
    async def main() -> None:
        async with await AsyncLedger.connect(worker_url, namespace=ns, owner="pytest") as ledger:
            step = ledger.step("mail", run_id="run-8", payload={}, on_pending=OnPending.RETURN)
            entered, other_done = asyncio.Event(), asyncio.Event()

            async def holder() -> None:
                async with step as handle:
                    assert handle.should_run
                    handle.result = {"sent": 1}
                    entered.set()
                    await other_done.wait()

            async def other() -> None:
                await entered.wait()
                async with step as handle:
                    assert not handle.should_run
                other_done.set()

            await asyncio.gather(holder(), other())
            op = await ledger.show("run-8:mail")
            assert (op.state, op.result_value()) == ("succeeded", {"sent": 1})

    asyncio.run(main())

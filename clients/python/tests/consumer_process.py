"""A consumer process for the crash tests: consumer_process.py URL NS QUEUE NEXT EFFECTS [POINT].

The handler's effect is a line appended to EFFECTS. At POINT the process prints ``crash POINT``
and blocks until the test kills it with SIGKILL.
"""

from __future__ import annotations

import sys
import threading

from idempo import Ledger
from idempo.consumer import Consumer, Envelope, Next


def main() -> None:
    url, ns, queue, next_queue, effects = sys.argv[1:6]
    point = sys.argv[6] if len(sys.argv) > 6 else ""

    def checkpoint(at: str) -> None:
        if at == point:
            print(f"crash {at}", flush=True)
            threading.Event().wait()

    def handler(envelope: Envelope) -> Next:
        with open(effects, "a", encoding="utf-8") as journal:
            journal.write(envelope.idempotency_key + "\n")
        follow = Envelope(
            envelope.run_id,
            "notify",
            "consumer",
            "notifier",
            {"after": envelope.step_id},
            envelope.produced_at,
            f"{envelope.run_id}:notify",
        )
        return Next({"done": envelope.step_id}, next_queue, follow)

    with Ledger(url, namespace=ns, owner="consumer") as ledger:
        consumer = Consumer(
            ledger, queue, handler, vt_ms=1000, lease_ms=1000, checkpoint=checkpoint
        )
        consumer.run(idle_exit_ms=2500, poll_s=0.1)
    print("idle", flush=True)


if __name__ == "__main__":
    main()

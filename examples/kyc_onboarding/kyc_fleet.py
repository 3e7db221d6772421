"""The worker processes of a run of the KYC example: started, their events read, killed when one
reports an account opened and not yet recorded, and replaced."""

from __future__ import annotations

import argparse
import json
import queue
import signal
import subprocess
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from kyc_setup import log


@dataclass
class Worker:
    slot: int
    generation: int
    process: subprocess.Popen[str]
    owner: str


@dataclass
class Observed:
    """What the workers reported."""

    model: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    accounts_opened: Counter[str] = field(default_factory=Counter)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    restarts: int = 0


class Fleet:
    """The worker processes: started, their events read, killed and replaced."""

    def __init__(self, args: argparse.Namespace, env: dict[str, str], command: list[str]) -> None:
        self.args = args
        self.env = env
        self.command = command
        self.events: queue.Queue[tuple[Worker, dict[str, Any] | None]] = queue.Queue()
        self.workers: dict[int, Worker] = {}
        self.generations = [0] * args.workers
        self.stopping = False

    def start_all(self) -> None:
        for slot in range(self.args.workers):
            self.start(slot, 0)

    def start(self, slot: int, generation: int) -> None:
        owner = f"kyc-worker-{slot}.{generation}"
        process = subprocess.Popen(
            [*self.command, "--owner", owner],
            env=self.env,
            stdout=subprocess.PIPE,
            text=True,
        )
        worker = Worker(slot, generation, process, owner)
        self.workers[slot] = worker
        threading.Thread(target=self._read, args=(worker,), daemon=True).start()

    def replace(self, worker: Worker) -> None:
        """Another worker in ``worker``'s slot, of the next generation."""
        self.generations[worker.slot] += 1
        self.start(worker.slot, self.generations[worker.slot])

    def _read(self, worker: Worker) -> None:
        assert worker.process.stdout is not None
        for line in worker.process.stdout:
            try:
                self.events.put((worker, json.loads(line)))
            except ValueError:
                log(f"{worker.owner}: {line.rstrip()}")
        worker.process.wait()
        self.events.put((worker, None))

    def kill(self, worker: Worker) -> None:
        worker.process.send_signal(signal.SIGKILL)
        worker.process.wait()

    def stop(self) -> None:
        self.stopping = True
        for worker in self.workers.values():
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        for worker in self.workers.values():
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()

    def handle(self, worker: Worker, event: dict[str, Any] | None, observed: Observed) -> None:
        """One worker event; ``None``: the worker's output ended (it exited or was killed)."""
        if event is None:
            if self.stopping or self.workers.get(worker.slot) is not worker:
                return
            # It ended by itself (an error it could not record): another takes its slot.
            observed.restarts += 1
            self.replace(worker)
            return
        kind = event.get("event")
        if kind == "model":
            observed.model[event["client"]].append(event["risk"])
        elif kind == "account":
            observed.accounts_opened[event["client"]] += 1
        elif kind == "error":
            observed.errors.append(event)
            log(f"kyc: {worker.owner}: {event['error']}")
        elif kind == "crash":
            self.kill(worker)
            observed.crashes.append({**event, "worker": worker.owner})
            log(
                f"kyc: {worker.owner} reported the account of {event['client']} opened and "
                "unrecorded: SIGKILL"
            )
            self.replace(worker)

    def drain(self, observed: Observed) -> None:
        """The events already read, handled."""
        while not self.events.empty():
            worker, event = self.events.get()
            self.handle(worker, event, observed)

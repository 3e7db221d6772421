"""One heartbeat thread per ``Ledger``: a timer heap of the leases its running steps hold.

A step registers its beat when its body starts and cancels it when the body ends; the thread sends
a beat only when one falls due (a third of the lease after the claim or the last beat), so a step
that ends sooner costs a heap push and a flag, no thread and no round trip. The thread starts with
the first beat registered and stops when the ledger closes. Beats are sent one at a time, earliest
first; a beat delayed by another still has two thirds of its lease left.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable

__all__ = ["Beat", "HeartbeatScheduler"]

# Cancelled beats stay in the heap until they fall due; past this many, and more than half the
# heap, the heap is rebuilt without them (a fast stream of short steps with a long lease).
_COMPACT_AFTER = 256


class Beat:
    """One step's registration: ``send`` runs every ``interval`` seconds until it answers False
    or the beat is cancelled; a number it answers is the delay to the next try instead (a beat
    that could not reach the ledger tries again sooner)."""

    __slots__ = ("cancelled", "due", "interval", "queued", "send")

    def __init__(self, due: float, interval: float, send: Callable[[], bool | float]) -> None:
        self.due = due
        self.interval = interval
        self.send = send
        self.cancelled = False
        self.queued = True

    def __lt__(self, other: Beat) -> bool:
        return self.due < other.due


class HeartbeatScheduler:
    """The timer heap and the thread that sends the beats as they fall due."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[Beat] = []
        self._stale = 0  # cancelled beats still in the heap
        self._sending: Beat | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def thread(self) -> threading.Thread | None:
        """The sending thread, once a beat was registered (for tests and diagnostics)."""
        return self._thread

    def start(self, interval: float, send: Callable[[], bool | float]) -> Beat:
        """Registers a beat, first due ``interval`` seconds from now."""
        beat = Beat(time.monotonic() + interval, interval, send)
        with self._cond:
            if self._closed:
                # The ledger is closed: the body's record will be refused anyway.
                beat.cancelled, beat.queued = True, False
                return beat
            heapq.heappush(self._heap, beat)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name=self._name)
                self._thread.start()
            elif self._heap[0] is beat:
                # Due before what the thread sleeps until (rare: beats of one lease arrive in
                # order of their due times).
                self._cond.notify()
        return beat

    def cancel(self, beat: Beat) -> None:
        """Stops a beat; returns once no beat of it is in flight, so none follows the record."""
        with self._cond:
            if beat.cancelled:
                return
            beat.cancelled = True
            if beat.queued:
                self._stale += 1
                if self._stale > _COMPACT_AFTER and self._stale * 2 > len(self._heap):
                    self._heap = [b for b in self._heap if not b.cancelled]
                    heapq.heapify(self._heap)
                    self._stale = 0
            while self._sending is beat:
                self._cond.wait()

    def close(self) -> None:
        """Stops the thread (after the beat in flight, if any); later beats are never sent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                if not self._heap:
                    self._cond.wait()
                    continue
                # A cancelled beat stays until it falls due, so the thread sleeps through the
                # short steps registered after it instead of waking for each (see ``start``).
                beat = self._heap[0]
                delay = beat.due - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
                beat.queued = False
                if beat.cancelled:
                    self._stale -= 1
                    continue
                self._sending = beat
                self._cond.release()
                try:
                    again = self._send(beat)
                finally:
                    self._cond.acquire()
                    self._sending = None
                    self._cond.notify_all()
                if again is not False and not beat.cancelled and not self._closed:
                    delay = beat.interval if again is True else float(again)
                    beat.due = time.monotonic() + delay
                    beat.queued = True
                    heapq.heappush(self._heap, beat)

    @staticmethod
    def _send(beat: Beat) -> bool | float:
        try:
            return beat.send()
        except Exception as error:
            # A bug, not a refusal (those end the beat in ``send``): reported as an uncaught
            # exception of the thread would be, and this beat ends as a per-step thread would.
            threading.excepthook(
                threading.ExceptHookArgs(
                    (type(error), error, error.__traceback__, threading.current_thread())
                )
            )
            return False

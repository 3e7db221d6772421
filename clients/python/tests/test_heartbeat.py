"""The heartbeat scheduler of a ``Ledger``: one thread, a timer heap, beats only when due."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from idempo._heartbeat import HeartbeatScheduler


def _appender(sent: list[int]) -> Callable[[], bool]:
    def send() -> bool:
        sent.append(1)
        return True

    return send


@pytest.fixture
def scheduler() -> HeartbeatScheduler:
    return HeartbeatScheduler("test-heartbeat")


def test_a_beat_repeats_every_interval_until_cancelled(scheduler: HeartbeatScheduler) -> None:
    sent: list[float] = []

    def send() -> bool:
        sent.append(time.monotonic())
        return True

    began = time.monotonic()
    beat = scheduler.start(0.05, send)
    time.sleep(0.28)
    scheduler.cancel(beat)
    count = len(sent)
    time.sleep(0.15)
    scheduler.close()
    assert 3 <= count <= 6
    assert len(sent) == count  # none after the cancel returned
    assert sent[0] - began >= 0.05


def test_a_beat_cancelled_before_its_time_is_never_sent(scheduler: HeartbeatScheduler) -> None:
    sent: list[int] = []
    beats = [scheduler.start(0.05, _appender(sent)) for _ in range(100)]
    for beat in beats:
        scheduler.cancel(beat)
    time.sleep(0.15)
    scheduler.close()
    assert sent == []


def test_a_refused_beat_ends_its_beating(scheduler: HeartbeatScheduler) -> None:
    sent: list[int] = []

    def send() -> bool:
        sent.append(1)
        return False  # the lease was lost

    scheduler.start(0.02, send)
    time.sleep(0.15)
    scheduler.close()
    assert sent == [1]


def test_cancel_waits_for_the_beat_in_flight(scheduler: HeartbeatScheduler) -> None:
    in_flight = threading.Event()
    finished: list[float] = []

    def send() -> bool:
        in_flight.set()
        time.sleep(0.2)
        finished.append(time.monotonic())
        return True

    beat = scheduler.start(0.01, send)
    assert in_flight.wait(2)
    scheduler.cancel(beat)
    returned = time.monotonic()
    scheduler.close()
    assert finished and finished[0] <= returned


def test_a_failing_beat_is_reported_and_the_others_go_on(
    scheduler: HeartbeatScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.exc_value))
    sent: list[int] = []

    def broken() -> bool:
        raise RuntimeError("a bug")

    def fine() -> bool:
        sent.append(1)
        return True

    scheduler.start(0.02, broken)
    beat = scheduler.start(0.03, fine)
    time.sleep(0.2)
    scheduler.cancel(beat)
    scheduler.close()
    assert len(reported) == 1 and isinstance(reported[0], RuntimeError)
    assert len(sent) >= 2


def test_an_earlier_beat_wakes_the_thread(scheduler: HeartbeatScheduler) -> None:
    sent: list[int] = []
    late = scheduler.start(60.0, lambda: True)
    scheduler.start(0.02, _appender(sent))
    time.sleep(0.2)
    assert sent
    scheduler.cancel(late)
    scheduler.close()


def test_one_thread_for_every_beat_and_none_after_close(scheduler: HeartbeatScheduler) -> None:
    before = threading.active_count()
    beats = [scheduler.start(30.0, lambda: True) for _ in range(1000)]
    assert threading.active_count() == before + 1
    thread = scheduler.thread
    assert thread is not None and thread.is_alive()
    for beat in beats:
        scheduler.cancel(beat)
    # Cancelled beats are dropped from the heap, not kept until they fall due.
    assert len(scheduler._heap) <= 512
    scheduler.close()
    assert not thread.is_alive()
    assert threading.active_count() == before
    # A beat registered after the close is never sent and starts no thread.
    sent: list[int] = []
    scheduler.start(0.01, _appender(sent))
    time.sleep(0.05)
    assert sent == [] and threading.active_count() == before

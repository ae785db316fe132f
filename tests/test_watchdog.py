"""The query watchdog: alarms fire at their deadline, never after disarm, and an idle watchdog
leaves no thread behind (an eval forks its workers only when no other thread runs)."""

from __future__ import annotations

import threading
import time

from macsql.database.watchdog import Watchdog


def test_an_alarm_fires_at_its_deadline_and_reports_it() -> None:
    dog = Watchdog()
    fired = threading.Event()
    alarm = dog.arm(time.monotonic() + 0.1, fired.set)
    assert fired.wait(1.0)
    assert alarm.disarm() is True


def test_a_disarmed_alarm_never_fires() -> None:
    dog = Watchdog()
    calls: list[int] = []
    alarm = dog.arm(time.monotonic() + 0.1, lambda: calls.append(1))
    assert alarm.disarm() is False
    time.sleep(0.3)
    assert calls == []


def test_an_idle_watchdog_leaves_no_thread() -> None:
    dog = Watchdog()
    dog.arm(time.monotonic() + 0.05, lambda: None)
    assert any(t.name == "macsql-query-watchdog" for t in threading.enumerate())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and dog._thread is not None:
        time.sleep(0.05)
    assert dog._thread is None
    # and it comes back for the next alarm
    fired = threading.Event()
    dog.arm(time.monotonic() + 0.05, fired.set)
    assert fired.wait(1.0)

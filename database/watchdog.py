"""A wall-clock alarm clock for queries: one thread that fires callbacks at their deadlines.

SQLite's progress handler only runs between virtual-machine steps, and one step (a `replace()`
on a 50 MB string) can take longer than any timeout; PostgreSQL functions may not check for
cancellation at all. A deadline that must hold whatever the query does needs a second thread
that acts on the connection from outside: `sqlite3.Connection.interrupt()`, a PostgreSQL cancel
request, and, for a server that does not stop, shutting the connection's socket.

An alarm's callback runs under the alarm's own lock, and `disarm` takes that lock: once `disarm`
returns, the callback has either run to its end or will never run, so a late interrupt can never
hit the next statement on a pooled connection.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable

_ARMED, _FIRED, _DISARMED = "armed", "fired", "disarmed"
_IDLE_EXIT_S = 1.0


class Alarm:
    """One pending deadline; `disarm()` says whether it had already fired."""

    __slots__ = ("_callback", "_lock", "_state", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self._callback = callback
        self._lock = threading.Lock()
        self._state = _ARMED

    def _fire(self) -> None:
        with self._lock:
            if self._state != _ARMED:
                return
            self._state = _FIRED
            # A connection already closed has nothing left to stop.
            with contextlib.suppress(Exception):
                self._callback()

    def disarm(self) -> bool:
        """Stop the alarm; True when its callback already ran."""
        with self._lock:
            fired = self._state == _FIRED
            self._state = _DISARMED
            return fired

    @property
    def fired(self) -> bool:
        return self._state == _FIRED


class Watchdog:
    """A heap of alarms served by one daemon thread, started on first use."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Alarm]] = []
        self._counter = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._waiting = False

    def arm(self, deadline: float, callback: Callable[[], None]) -> Alarm:
        """Call `callback` at `deadline` (time.monotonic()) unless disarmed first."""
        alarm = Alarm(deadline, callback)
        with self._wake:
            heapq.heappush(self._heap, (deadline, next(self._counter), alarm))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="macsql-query-watchdog", daemon=True
                )
                self._thread.start()
            self._wake.notify()
        return alarm

    def _serve(self) -> None:
        while True:
            with self._wake:
                while True:
                    while self._heap and self._heap[0][2]._state == _DISARMED:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        # An idle watchdog goes away, so that a process with nothing in
                        # flight has no thread but its own (the eval forks only then).
                        if not self._wait(_IDLE_EXIT_S) and not self._heap:
                            self._thread = None
                            return
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        alarm = heapq.heappop(self._heap)[2]
                        break
                    # A disarmed alarm is dropped when its deadline comes (disarm does not wake
                    # this thread: that would cost a thread switch per statement).
                    self._wait(wait)
            alarm._fire()

    def _wait(self, seconds: float) -> bool:
        self._waiting = True
        try:
            return self._wake.wait(seconds)
        finally:
            self._waiting = False

    def idle_threads(self) -> int:
        """1 when the watchdog's thread is alive but only waits, with no alarm armed: it holds
        no lock then, and a forked child starts a watchdog of its own, so forking is safe. (It
        may wait for the deadline of an alarm disarmed long ago, a query timeout away.)"""
        with self._wake:
            thread = self._thread
            if thread is None or not thread.is_alive() or not self._waiting:
                return 0
            return int(all(alarm._state == _DISARMED for _, _, alarm in self._heap))

    def _reset_in_child(self) -> None:
        # A forked child has no watchdog thread, and its parent's alarms are not its own.
        self._heap = []
        self._wake = threading.Condition()
        self._thread = None
        self._waiting = False


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reset_in_child)

"""Reusable daemon threads for work that a caller waits for with a deadline.

A model call and a SQL statement each run in a worker thread, so that the caller can stop
waiting at its deadline whatever the work does. Starting a thread costs about half a millisecond
of CPU here, paid two or three times per question; a worker that has finished its task instead
waits for the next one, and goes away after `IDLE_EXIT_S` without one.

Unlike `concurrent.futures.ThreadPoolExecutor` there is no cap and no queue: a task starts at
once, on an idle worker or a new one, because a deadline counts from the moment the caller
starts waiting. A worker still busy with abandoned work (a call past its deadline) is simply
not idle, and the next task gets another.

Fork: a child has none of its parent's threads, so `os.register_at_fork` gives every pool a
fresh, empty state in the child. An idle worker holds no lock that any other code takes (it
waits on its own inbox), so forking while only idle workers are alive is safe: the eval's
scheduler counts them with `idle_workers()` when it chooses between fork and spawn.
"""

from __future__ import annotations

import contextvars
import os
import queue
import sys
import threading
import weakref
from collections.abc import Callable

IDLE_EXIT_S = 10.0
"""Seconds an idle worker waits for a task before its thread ends."""

Task = Callable[[], object]


class _Worker:
    __slots__ = ("inbox",)

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[tuple[Task, contextvars.Context]] = queue.SimpleQueue()


class WorkerThreads:
    """Daemon threads named `name` that run one task each at a time, reused between tasks."""

    def __init__(self, name: str, idle_exit_s: float = IDLE_EXIT_S) -> None:
        self.name = name
        self.idle_exit_s = idle_exit_s
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self.started = 0
        """Threads started so far (in this process): tests read it to see reuse."""
        _POOLS.add(self)

    def run(self, task: Task, context: contextvars.Context | None = None) -> None:
        """Start `task()` now in a worker thread, inside `context` (default: an empty one, so
        that nothing a previous task set is seen). Its exceptions are its own to handle: one
        that escapes is reported like an uncaught exception in a thread."""
        job = (task, context if context is not None else contextvars.Context())
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self.started += 1
        if worker is not None:
            worker.inbox.put(job)
            return
        worker = _Worker()
        worker.inbox.put(job)
        threading.Thread(target=self._serve, args=(worker,), name=self.name, daemon=True).start()

    def idle(self) -> int:
        """Workers waiting for a task."""
        with self._lock:
            return len(self._idle)

    def _serve(self, worker: _Worker) -> None:
        while True:
            try:
                task, context = worker.inbox.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:
                    if worker in self._idle:
                        self._idle.remove(worker)
                        return
                continue  # handed a task just now: it is on its way
            try:
                context.run(task)
            except BaseException:
                exc_type, exc, trace = sys.exc_info()
                threading.excepthook(
                    threading.ExceptHookArgs((exc_type, exc, trace, threading.current_thread()))
                )
            del task, context
            with self._lock:
                self._idle.append(worker)

    def _reset_in_child(self) -> None:
        # The child has no worker threads: the parent's idle ones are not its own.
        self._lock = threading.Lock()
        self._idle = []
        self.started = 0


_POOLS: weakref.WeakSet[WorkerThreads] = weakref.WeakSet()


def idle_workers() -> int:
    """Threads of every pool in this process that wait for a task (and so hold no lock)."""
    return sum(pool.idle() for pool in list(_POOLS))


def _reset_pools_in_child() -> None:
    for pool in list(_POOLS):
        pool._reset_in_child()


os.register_at_fork(after_in_child=_reset_pools_in_child)

"""The deadline workers' threads: reused from one task to the next, never queued behind a busy
one, empty-context by default, gone when idle, and safe across fork."""

from __future__ import annotations

import contextvars
import multiprocessing
import subprocess
import sys
import threading
import time
from typing import Any

from timing import generous

from macsql.core.worker_threads import WorkerThreads, idle_workers

_probe: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")


def _run_and_wait(pool: WorkerThreads, task: Any, context: Any = None) -> None:
    done = threading.Event()

    def wrapped() -> None:
        try:
            task()
        finally:
            done.set()

    pool.run(wrapped, context)
    assert done.wait(5)


def _wait_until_idle(pool: WorkerThreads, count: int) -> None:
    deadline = time.monotonic() + 5
    while pool.idle() < count and time.monotonic() < deadline:
        time.sleep(0.005)
    assert pool.idle() == count


def test_sequential_tasks_reuse_one_thread() -> None:
    pool = WorkerThreads("test-reuse")
    threads: set[int] = set()
    for _ in range(20):
        _run_and_wait(pool, lambda: threads.add(threading.get_ident()))
        _wait_until_idle(pool, 1)
    assert pool.started == 1
    assert len(threads) == 1


def test_a_busy_worker_never_delays_the_next_task() -> None:
    pool = WorkerThreads("test-busy")
    release = threading.Event()
    pool.run(lambda: release.wait(5))  # abandoned work, still running
    started = time.monotonic()
    _run_and_wait(pool, lambda: None)
    assert time.monotonic() - started < generous(0.0)  # not after the busy one's 5 s
    assert pool.started == 2
    release.set()
    _wait_until_idle(pool, 2)


def test_each_task_sees_its_own_context_only() -> None:
    pool = WorkerThreads("test-context")
    seen: list[str] = []

    def set_and_read() -> None:
        _probe.set("left behind")
        seen.append(_probe.get())

    _run_and_wait(pool, set_and_read)
    _wait_until_idle(pool, 1)
    _run_and_wait(pool, lambda: seen.append(_probe.get()))  # nothing left from the last task
    _wait_until_idle(pool, 1)
    token = _probe.set("the caller's")
    try:
        _run_and_wait(pool, lambda: seen.append(_probe.get()), contextvars.copy_context())
    finally:
        _probe.reset(token)
    assert seen == ["left behind", "unset", "the caller's"]
    assert pool.started == 1


def test_an_idle_worker_goes_away() -> None:
    pool = WorkerThreads("test-idle-exit", idle_exit_s=0.05)
    _run_and_wait(pool, lambda: None)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
        t.name == "test-idle-exit" for t in threading.enumerate()
    ):
        time.sleep(0.01)
    assert not any(t.name == "test-idle-exit" for t in threading.enumerate())
    assert pool.idle() == 0
    _run_and_wait(pool, lambda: None)  # and a new one starts for the next task
    assert pool.started == 2


def test_an_escaping_exception_is_reported_and_the_worker_lives_on(monkeypatch: Any) -> None:
    reported: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.exc_value))
    pool = WorkerThreads("test-raise")

    def fail() -> None:
        raise ValueError("boom")

    pool.run(fail)
    _wait_until_idle(pool, 1)
    _run_and_wait(pool, lambda: None)
    assert [type(e) for e in reported] == [ValueError]
    assert pool.started == 1


def _child_runs_a_task(pool: WorkerThreads, out: Any) -> None:
    # The parent's idle worker is not here: the pool must start its own.
    idle_before = pool.idle()
    done = threading.Event()
    pool.run(done.set)
    out.put((idle_before, done.wait(5), pool.started))


def test_a_pool_works_in_a_forked_child() -> None:
    pool = WorkerThreads("test-fork")
    _run_and_wait(pool, lambda: None)
    _wait_until_idle(pool, 1)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_runs_a_task, args=(pool, out))
    child.start()
    idle_before, ran, started = out.get(timeout=20)
    child.join(20)
    assert child.exitcode == 0
    assert idle_before == 0  # reset at fork
    assert ran and started == 1
    assert pool.idle() == 1  # the parent's worker is untouched


_SCHEDULER_PROBE = """
import threading
from macsql.evals.scheduler import start_method
from macsql.core.worker_threads import WorkerThreads, idle_workers
pool = WorkerThreads("probe")
done = threading.Event()
pool.run(done.set)
done.wait(5)
while idle_workers() < 1:
    pass
print(start_method())
release = threading.Event()
pool.run(lambda: release.wait(5))
print(start_method())
release.set()
"""


def test_the_eval_forks_past_idle_workers_but_not_past_busy_ones() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCHEDULER_PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fork", "spawn"]


def test_idle_workers_counts_every_pool() -> None:
    before = idle_workers()
    pools = [WorkerThreads("test-count-a"), WorkerThreads("test-count-b")]
    for pool in pools:
        _run_and_wait(pool, lambda: None)
        _wait_until_idle(pool, 1)
    assert idle_workers() >= before + 2
